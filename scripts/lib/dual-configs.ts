/**
 * The configs of a dual-mode comparison (scripts/dual-compare.ts), made from the main job's: the
 * jobs' (without the keys only trainingRun reads) and the joint evaluation's (its test split).
 */
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import { keysPlanActJobIgnores } from '../../src/config/refusals';
import type { PlanActJobInput } from '../../src/contracts/plan-act-job';

/** The main job's config as the joint evaluation takes it: its task (test split included), model, rl and eval, Plan/Act rollouts in `mode`. */
export function evaluationConfig(base: Record<string, unknown>, experiment: string, mode: 'shared' | 'dual', credit: boolean): RunConfigInput {
  // Trackers are the jobs' (one run each, jobConfig); the evaluation logs nowhere.
  const { compare: _unused, tracking: _tracking, ...rest } = base as Record<string, unknown> & { compare?: unknown; tracking?: unknown };
  // The SFT demonstrations' keys are trainingRun's (a job refuses them): the jobs start from SFT's checkpoint.
  const { demoToolUseRate: _rate, extraDemonstrations: _extra, ...task } = rest.task as Record<string, unknown>;
  const cfg = {
    ...rest,
    task,
    experiment,
    // A shared job has no partner to wait for: the barrier's timeout is dual mode's only.
    rollout: { ...(rest.rollout as Record<string, unknown>), kind: 'plan-act', mode, ...(mode === 'dual' ? { barrierTimeoutSec: 1800 } : {}), rolloutTimeoutSec: 1800, fallbackOnTimeout: false, plannerCredit: credit ? 'correct-results' : 'outcome' },
    // The jobs' own oracle-context evaluations only at the start (the joint evaluation is the measure).
    eval: { ...(rest.eval as Record<string, unknown>), rlEverySteps: 1000 },
  } as RunConfigInput;
  parseRunConfig(cfg, `${experiment} config`);
  return cfg;
}

/**
 * The same as a job takes it: without the keys only trainingRun reads (SFT, its evaluations and
 * test split, asynchronous RL), which a job refuses (src/config/refusals.ts); with the main job's
 * trackers, where each job logs a run of its own (docs/tracking.md).
 */
export function jobConfig(base: Record<string, unknown>, experiment: string, role: PlanActJobInput['role'], credit: boolean): RunConfigInput {
  const mode = role === 'shared' ? 'shared' : 'dual';
  const { sft: _sft, init: _init, ...cfg } = evaluationConfig(base, experiment, mode, credit);
  const { trainProblems: _train, rl: taskRl, ...task } = cfg.task ?? {};
  const { evalProblems: _evalProblems, testProblems: _testProblems, ...rlTask } = taskRl ?? {};
  const { async: _async, ...rl } = cfg.rl ?? {};
  const { everySteps: _every, sampled: _sampled, passAtK: _passAtK, ...evals } = cfg.eval ?? {};
  const tracking = (base as { tracking?: RunConfigInput['tracking'] }).tracking;
  const job: RunConfigInput = { ...cfg, task: { ...task, rl: rlTask }, rl, eval: evals, ...(tracking ? { tracking } : {}) };
  const ignored = keysPlanActJobIgnores(parseRunConfig(job, `${experiment} ${role} job config`), role);
  if (ignored.length > 0) throw new Error(`${experiment} ${role} job config: ${ignored.map((p) => p.path).join(', ')} would be refused`);
  return job;
}
