/**
 * No silent options across workflows: trainingRun, planActJob and the rollout sessions take one run
 * config, and some keys mean something to only one of them. Each workflow refuses the keys it would
 * ignore, by name, when they differ from their defaults (src/config/defaults.ts). Checked where the config is
 * resolved (the resolveRunConfig and loadJobConfig activities) when a run or job starts: a later
 * execution of it (continue-as-new, --resume) carries the config it was started with.
 */
import { differsFromDefault } from './defaults';
import type { RunConfig } from './schema';

export interface KeyProblem {
  path: string;
  message: string;
}

/** Keys of a trainingRun's config that only planActJob and its rollout sessions read. */
export function keysTrainingRunIgnores(cfg: RunConfig): KeyProblem[] {
  return ['rollout.rolloutTimeoutSec', 'rollout.barrierTimeoutSec', 'rollout.fallbackOnTimeout']
    .filter((key) => differsFromDefault(cfg, key))
    .map((path) => ({
      path,
      message: "it bounds a planActJob's rollouts and its dual-mode barrier (docs/plan-act.md); trainingRun waits for each step's rollout, and a worker that dies mid-rollout is retried after timeouts.heartbeatSec",
    }));
}

/** Keys of a planActJob's config that only trainingRun reads (SFT, its evaluations and test split, asynchronous RL). */
export function keysPlanActJobIgnores(cfg: RunConfig, role: 'planner' | 'actor' | 'shared'): KeyProblem[] {
  const problems: KeyProblem[] = [];
  const refuse = (path: string, message: string) => problems.push({ path, message });
  if ((cfg.rl.async?.maxStaleness ?? 0) > 0) refuse('rl.async.maxStaleness', 'a job trains each rollout it took part in before its next one: its schedule is synchronous (asynchronous RL is trainingRun only)');
  const refuseSet = (keys: string[], message: string) => keys.filter((key) => differsFromDefault(cfg, key)).forEach((key) => refuse(key, message));
  refuseSet(['init.fromHf'], 'a job starts from weightsFromRun / weights in its input, or a fresh policy');
  refuseSet(['sft'], 'a job runs no SFT (trainingRun only); it starts from weightsFromRun');
  refuseSet(['task.trainProblems'], 'SFT demonstrations: trainingRun only');
  refuseSet(['task.rl.evalProblems', 'task.rl.testProblems'], "trainingRun's RL evaluations and test split; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts");
  refuseSet(['eval.everySteps', 'eval.sampled', 'eval.passAtK'], "trainingRun's SFT, sampled and test evaluations; a job's own evaluations play task.evalProblems every eval.rlEverySteps rollouts");
  if (cfg.tracking) refuse('tracking', 'a job logs to no experiment tracker yet (trainingRun only, docs/tracking.md)');
  if (role === 'shared') refuseSet(['rollout.barrierTimeoutSec'], 'a shared job plays both roles itself: there is no partner to wait for (dual mode only)');
  return problems;
}

/** Which workflow a config is resolved for, and a job's role. */
export type ConfigConsumer = { workflow: 'trainingRun' } | { workflow: 'planActJob'; role: 'planner' | 'actor' | 'shared' };

/** The keys `consumer` would ignore. */
export function keysIgnoredBy(cfg: RunConfig, consumer: ConfigConsumer): KeyProblem[] {
  return consumer.workflow === 'trainingRun' ? keysTrainingRunIgnores(cfg) : keysPlanActJobIgnores(cfg, consumer.role);
}
