/**
 * Configs as histories recorded them. A workflow replays with the config its history holds, and a
 * config recorded before a key existed lacks it: the workflow must then run as the code that
 * recorded it did. Each such key's value for old configs is here, once (docs/versioning.md).
 */
import type { RunConfig } from './schema';

/** The config with every key that a recorded config may lack filled with the recording code's behaviour. */
export function withRecordedDefaults(cfg: RunConfig): RunConfig {
  // Absent in configs recorded before tree output segments: no split, and the root a branch point.
  const tree = cfg.tree as Partial<RunConfig['tree']> | undefined;
  // Absent in configs recorded before per-horizon groups: one GRPO group per layout.
  const horizon = cfg.horizon as Partial<NonNullable<RunConfig['horizon']>> | undefined;
  return {
    ...cfg,
    ...(tree ? { tree: { ...tree, segmentTokens: tree.segmentTokens ?? 0, expandFromRoot: tree.expandFromRoot ?? true } as RunConfig['tree'] } : {}),
    ...(horizon ? { horizon: { ...horizon, groupBy: horizon.groupBy ?? 'layout' } as NonNullable<RunConfig['horizon']> } : {}),
  };
}
