/**
 * No silent options across workflows: trainingRun, planActJob and the rollout sessions take one run
 * config, and some keys mean something to only one of them. Each workflow refuses the keys it would
 * ignore, by name, when they differ from their defaults (a parsed config has every default filled
 * in, so a key set to its default cannot be told from one left out). Checked where the config is
 * resolved (the resolveRunConfig and loadJobConfig activities) when a run or job starts: a later
 * execution of it (continue-as-new, --resume) carries the config it was started with.
 */
import { EvalSchema, RolloutSchema, SftSchema, TaskSchema, type RunConfig } from './schema';

export interface KeyProblem {
  path: string;
  message: string;
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** Keys of a trainingRun's config that only planActJob and its rollout sessions read. */
export function keysTrainingRunIgnores(cfg: RunConfig): KeyProblem[] {
  const rollout = RolloutSchema.parse({});
  return (['rolloutTimeoutSec', 'barrierTimeoutSec', 'fallbackOnTimeout'] as const)
    .filter((key) => !same(cfg.rollout[key], rollout[key]))
    .map((key) => ({
      path: `rollout.${key}`,
      message: "it bounds a planActJob's rollouts and its dual-mode barrier (docs/plan-act.md); trainingRun waits for each step's rollout, and a worker that dies mid-rollout is retried after timeouts.heartbeatSec",
    }));
}

/** Keys of a planActJob's config that only trainingRun reads (SFT, its evaluations and test split, asynchronous RL). */
export function keysPlanActJobIgnores(cfg: RunConfig, role: 'planner' | 'actor' | 'shared'): KeyProblem[] {
  const problems: KeyProblem[] = [];
  const refuse = (path: string, message: string) => problems.push({ path, message });
  if ((cfg.rl.async?.maxStaleness ?? 0) > 0) refuse('rl.async.maxStaleness', 'a job trains each rollout it took part in before its next one: its schedule is synchronous (asynchronous RL is trainingRun only)');
  if (cfg.init.fromHf !== undefined) refuse('init.fromHf', 'a job starts from weightsFromRun / weights in its input, or a fresh policy');
  if (!same(cfg.sft, SftSchema.parse({}))) refuse('sft', 'a job runs no SFT (trainingRun only); it starts from weightsFromRun');
  const task = TaskSchema.parse({});
  if (cfg.task.trainProblems !== task.trainProblems) refuse('task.trainProblems', 'SFT demonstrations: trainingRun only');
  for (const key of ['evalProblems', 'testProblems'] as const) {
    if (cfg.task.rl[key] !== task.rl[key]) refuse(`task.rl.${key}`, "trainingRun's RL evaluations and test split; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts");
  }
  const evals = EvalSchema.parse({});
  for (const key of ['everySteps', 'sampled', 'passAtK'] as const) {
    if (!same(cfg.eval[key], evals[key])) refuse(`eval.${key}`, "trainingRun's SFT, sampled and test evaluations; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts");
  }
  if (role === 'shared' && cfg.rollout.barrierTimeoutSec !== RolloutSchema.parse({}).barrierTimeoutSec) {
    refuse('rollout.barrierTimeoutSec', 'a shared job plays both roles itself: there is no partner to wait for (dual mode only)');
  }
  return problems;
}

/** Which workflow a config is resolved for, and a job's role. */
export type ConfigConsumer = { workflow: 'trainingRun' } | { workflow: 'planActJob'; role: 'planner' | 'actor' | 'shared' };

/** The keys `consumer` would ignore. */
export function keysIgnoredBy(cfg: RunConfig, consumer: ConfigConsumer): KeyProblem[] {
  return consumer.workflow === 'trainingRun' ? keysTrainingRunIgnores(cfg) : keysPlanActJobIgnores(cfg, consumer.role);
}
