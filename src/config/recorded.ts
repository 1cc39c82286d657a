/**
 * Configs as histories recorded them. A workflow replays with the config its history holds, and a
 * config recorded before a key existed lacks it: the workflow must then run as the code that
 * recorded it did. Each such key's value for old configs is here, once (docs/versioning.md).
 */
import type { RunConfig } from './schema';

/** rl.microBatch of a config recorded before the key (activities/training.ts reads it for an older workflow's input too). */
export const RECORDED_MICRO_BATCH: RunConfig['rl']['microBatch'] = { rows: 16, byLength: false };

/** The config with every key that a recorded config may lack filled with the recording code's behaviour. */
export function withRecordedDefaults(cfg: RunConfig): RunConfig {
  // Absent in configs recorded before tree output segments: no split, and the root a branch point.
  const tree = cfg.tree as Partial<RunConfig['tree']> | undefined;
  // Absent in configs recorded before per-horizon groups: one GRPO group per layout.
  const horizon = cfg.horizon as Partial<NonNullable<RunConfig['horizon']>> | undefined;
  // Absent in configs recorded before issue 24: whole-expression splits, no test evaluation, no
  // pass@k, and the more-SFT baseline budgeted by RL's wall time.
  const task = cfg.task as Partial<RunConfig['task']> & { rl?: Partial<RunConfig['task']['rl']> };
  const evalCfg = cfg.eval as Partial<RunConfig['eval']>;
  const compare = cfg.compare as Partial<RunConfig['compare']>;
  // Grid runs use none of the arithmetic keys (and their config checks refuse values other than
  // the defaults, which a continue-as-new would carry): they stay as recorded.
  const arith = task.kind !== 'grid';
  // Absent in configs recorded before rl.microBatch: 16 rows per pass, in the mini-batch's order.
  const rl = cfg.rl as Partial<RunConfig['rl']>;
  return {
    ...cfg,
    rl: { ...rl, microBatch: rl.microBatch ?? RECORDED_MICRO_BATCH } as RunConfig['rl'],
    ...(arith
      ? {
          task: { ...task, split: task.split ?? 'expression', rl: { ...task.rl, testProblems: task.rl?.testProblems ?? 0 } } as RunConfig['task'],
          eval: { ...evalCfg, passAtK: evalCfg.passAtK ?? 0 } as RunConfig['eval'],
        }
      : {}),
    compare: { ...compare, filteredSft: compare.filteredSft ?? false, rft: compare.rft ?? false, sftBudget: compare.sftBudget ?? 'rl-wall-time' } as RunConfig['compare'],
    ...(tree ? { tree: { ...tree, segmentTokens: tree.segmentTokens ?? 0, expandFromRoot: tree.expandFromRoot ?? true } as RunConfig['tree'] } : {}),
    ...(horizon ? { horizon: { ...horizon, groupBy: horizon.groupBy ?? 'layout' } as NonNullable<RunConfig['horizon']> } : {}),
    // Absent in grid configs recorded before the grid's test part: every evaluation on the whole held-out split.
    ...(!arith && task.grid ? { task: { ...task, grid: { ...task.grid, testLayouts: (task.grid as Partial<NonNullable<RunConfig['task']['grid']>>).testLayouts ?? 0 } } as RunConfig['task'] } : {}),
  };
}

/**
 * A config parsed inside a workflow (histories recorded before `config-resolved-once`) gets today's
 * defaults from the parser; those histories are older than every key above, so the keys are put
 * back to what the recording code did.
 */
export function asRecordedInWorkflow(cfg: RunConfig): RunConfig {
  const copy = JSON.parse(JSON.stringify(cfg)) as { task: Record<string, unknown> & { rl: Record<string, unknown> }; rl: Record<string, unknown>; eval: Record<string, unknown>; compare: Record<string, unknown> };
  delete copy.rl.microBatch;
  delete copy.task.split;
  delete copy.task.rl.testProblems;
  if (copy.task.grid && typeof copy.task.grid === 'object') delete (copy.task.grid as Record<string, unknown>).testLayouts;
  delete copy.eval.passAtK;
  delete copy.compare.filteredSft;
  delete copy.compare.rft;
  delete copy.compare.sftBudget;
  return withRecordedDefaults(copy as unknown as RunConfig);
}

/** task.split of a task config, 'expression' for one recorded before the key (an activity of an older run's workflow). */
export function splitSchemeOf(task: RunConfig['task']): RunConfig['task']['split'] {
  return (task as Partial<RunConfig['task']>).split ?? 'expression';
}
