/**
 * No silent options for the grid world: its keys (task.grid, horizon.*, rollout.kind horizon) go
 * together, and the keys of the arithmetic task and of Plan/Act rollouts, which a grid run would
 * ignore, are rejected there by name. Fills task.grid and horizon with their defaults for grid runs.
 */
import { ConfigError } from './errors';
import { assignHorizons } from '../horizon/assign';
import { GridLayoutError, heldOutLayouts, type HeldOutPart } from '../tasks/grid/layout';
import { EvalSchema, GridTaskSchema, HorizonSchema, RlSchema, RolloutSchema, TaskSchema, TimelineSchema, type RunConfig } from './schema';

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

export function checkGrid(cfg: RunConfig, source: string): void {
  const fail = (path: string, message: string): never => {
    throw new ConfigError(source, [{ path, message }]);
  };
  const grid = cfg.task.kind === 'grid';
  if (!grid) {
    if (cfg.task.grid !== undefined) fail('task.grid', `task.grid takes effect with task.kind: grid (this config has task.kind: ${cfg.task.kind})`);
    if (cfg.horizon !== undefined) fail('horizon', `the horizon.* keys take effect with task.kind: grid (this config has task.kind: ${cfg.task.kind})`);
    if (cfg.rollout.kind === 'horizon') fail('rollout.kind', 'rollout.kind horizon runs the grid world: set task.kind: grid');
    return;
  }
  if (cfg.rollout.kind !== 'horizon') fail('rollout.kind', `task.kind grid runs horizon episodes: set rollout.kind: horizon (it is ${cfg.rollout.kind})`);
  const task = TaskSchema.parse({});
  for (const key of ['difficulty', 'demoToolUseRate', 'extraDemonstrations', 'rl', 'split'] as const) {
    if (!same(cfg.task[key], task[key])) fail(`task.${key}`, `task.${key} belongs to the arithmetic task; task.kind grid does not use it`);
  }
  const rollout = RolloutSchema.parse({ kind: 'horizon' });
  for (const key of Object.keys(rollout) as Array<keyof typeof rollout>) {
    if (!same(cfg.rollout[key], rollout[key])) fail(`rollout.${key}`, `rollout.${key} belongs to Plan/Act rollouts; horizon episodes do not use it`);
  }
  const rl = RlSchema.parse({});
  if (cfg.rl.maxNewTokens !== rl.maxNewTokens) fail('rl.maxNewTokens', 'a grid plan is exactly H tokens (horizon.actionHorizonsPattern); rl.maxNewTokens does not apply');
  if (cfg.rl.dynamicSampling.enabled) fail('rl.dynamicSampling.enabled', 'dynamic sampling draws more Plan/Act batches; horizon rollouts do not support it');
  if (cfg.eval.maxNewTokens !== EvalSchema.parse({}).maxNewTokens) fail('eval.maxNewTokens', 'a grid plan is exactly H tokens; eval.maxNewTokens does not apply');
  if (cfg.eval.passAtK !== EvalSchema.parse({}).passAtK) fail('eval.passAtK', 'pass@k samples arithmetic test problems; the grid world\'s test evaluation plays each held-out layout once per horizon');
  // A plan is one generation per sample: there are no timelines to merge.
  if (!same(cfg.timeline, TimelineSchema.parse({}))) fail('timeline', 'timeline merging joins the calls of multi-call episodes; a grid plan is one generation, so task.kind grid does not use the timeline.* keys');
  if (cfg.inference.engine !== 'embedded') fail('inference.engine', 'the grid world runs on the embedded policy');
  cfg.task.grid ??= GridTaskSchema.parse({});
  refuseMissingHeldOutLayouts(cfg, cfg.task.grid, fail);
  cfg.horizon ??= HorizonSchema.parse({});
  if (cfg.horizon.groupBy === 'layout-horizon') {
    // The rollout's assignment: a layout's rl.groupSize episodes spread over the horizons.
    const horizons = assignHorizons(cfg.horizon.actionHorizonsPattern, cfg.rl.promptsPerStep * cfg.rl.groupSize);
    const counts = new Map<string, number>();
    horizons.forEach((h, i) => {
      const key = `${Math.floor(i / cfg.rl.groupSize)}:${h}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    });
    if ([...counts.values()].some((n) => n < 2)) fail('horizon.groupBy', `layout-horizon groups need at least 2 episodes of a layout at each H: raise rl.groupSize (${cfg.rl.groupSize}) to a multiple of 2 x the pattern's length`);
    // In a group of one H the plan reward multiplies every score by the same 1 + coef * H / baseH
    // (failures score 0 either way), and dividing by the group's std cancels that factor: the
    // advantages, and so the run, would be the same as without it.
    if (cfg.horizon.usePlanReward && cfg.rl.normAdvByStd && !cfg.rl.useKlInReward) {
      fail(
        'horizon.usePlanReward',
        'with groupBy layout-horizon every group shares one H, so the plan reward scales all its scores by one factor, which GRPO\'s std normalisation cancels: it would change nothing. Use groupBy: layout (the design), or rl.normAdvByStd: false, where it weighs long-H groups more',
      );
    }
  }
  const cells = cfg.task.grid.rows * cfg.task.grid.cols + cfg.task.grid.rows + 16;
  const longest = Math.max(...cfg.horizon.actionHorizonsPattern);
  // The observation (one token per cell and newline, ~16 more for the header) and the plan must fit.
  if (cells + longest + 1 > cfg.model.maxSeq) fail('model.maxSeq', `a ${cfg.task.grid.rows}x${cfg.task.grid.cols} observation and a plan of ${longest} moves need about ${cells + longest + 1} tokens; model.maxSeq is ${cfg.model.maxSeq}`);
}

/**
 * The held-out layouts a run will play must exist in the numbers asked: otherwise it would fail at
 * its first evaluation or, for the test part, only after all its training. Small grids have few.
 */
function refuseMissingHeldOutLayouts(cfg: RunConfig, grid: NonNullable<RunConfig['task']['grid']>, fail: (path: string, message: string) => never): void {
  const sets: Array<[path: string, count: number, part: HeldOutPart | undefined]> =
    grid.testLayouts > 0
      ? [
          ['task.evalProblems', cfg.task.evalProblems, 'validation'],
          ['task.grid.testLayouts', grid.testLayouts, 'test'],
        ]
      : [['task.evalProblems', cfg.task.evalProblems, undefined]];
  for (const [path, count, part] of sets) {
    try {
      heldOutLayouts(cfg.seed, count, grid, part);
    } catch (err) {
      if (err instanceof GridLayoutError) fail(path, `${err.message}: ask for fewer, or make the grid larger`);
      throw err;
    }
  }
}
