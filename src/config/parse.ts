import { withChatTokenizer } from './chat-defaults';
import { refuseConfig, withGridDefaults } from './refusals';
import { RunConfigSchema, type RunConfig } from './schema';
import { ConfigError } from './errors';

/**
 * Validates a plain object (already read from JSON/YAML or a workflow input): the schema's shapes
 * and types, then the refusals every workflow makes (src/config/refusals.ts, rows for `both`).
 * `refuseUnread: false` leaves out the refusals checked at a run's start only (keys that count only
 * with a switch on), for configs accepted before them: a run's carried config, and histories that
 * parse in the workflow.
 */
export function parseRunConfig(raw: unknown, source = 'input', opts: { refuseUnread?: boolean } = {}): RunConfig {
  const result = RunConfigSchema.safeParse(raw ?? {});
  if (result.success) {
    const cfg = withGridDefaults(result.data);
    refuseConfig(cfg, source, { continued: opts.refuseUnread === false });
    return withChatTokenizer(cfg);
  }
  throw new ConfigError(
    source,
    result.error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: issue.message })),
  );
}
