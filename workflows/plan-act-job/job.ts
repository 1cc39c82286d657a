/**
 * What the parts of one planActJob share: its input and config, its query state, the session
 * deliveries its signal handler collects, its activities, and the policy it brings to each rollout
 * (weights, checkpoint and the checkpoint it started from, which training replaces).
 */
import type { RunConfig } from '../../src/config/schema';
import type { JobEvalPoint, JobRolloutResult, PlanActJobInput, PlanActJobState } from '../../src/contracts/plan-act-job';
import type { SessionDelivery } from '../../src/contracts/rollout-session';
import type { CheckpointInfo, PolicyRef, WeightsInfo } from '../../src/contracts/weights';
import type { planActProxies } from '../activity-proxies';
import type { JobTrackingCarry } from './tracking';

/** State carried across continue-as-new. */
export interface PlanActJobCarry {
  config: RunConfig;
  weights: WeightsInfo;
  completed: JobRolloutResult[];
  fallbacks: number;
  /** Jobs that train: their checkpoint and the one they started from (the KL reference). */
  checkpoint?: CheckpointInfo;
  start?: CheckpointInfo;
  evals?: JobEvalPoint[];
  /** tracking.*: the job's MLflow run and TensorBoard folder, and what they had not yet taken. */
  tracking?: JobTrackingCarry;
}

/** A job before it has weights: what it was given and what it set up. */
export interface JobSetup {
  input: PlanActJobInput;
  /** The job's workflow id: it names the job's checkpoints, weights and children. */
  self: string;
  cfg: RunConfig;
  state: PlanActJobState;
  deliveries: Map<number, SessionDelivery>;
  activities: ReturnType<typeof planActProxies>;
  /** The job trains its own policy after each rollout (`plan-act-job-trains`). */
  trains: boolean;
}

/** The policy a job holds: replaced after each update when the job trains. */
export interface JobPolicy {
  weights: WeightsInfo;
  checkpoint?: CheckpointInfo;
  /** The checkpoint training started from (the KL reference). */
  start?: CheckpointInfo;
}

export interface Job extends JobSetup, JobPolicy {
  /** The weights as a rollout gets them: with the job's inference queue or remote server. */
  policy: PolicyRef;
  /** Held-out evaluations of a training job's own weights. */
  evals: JobEvalPoint[];
}

/** The policy reference a rollout gets for these weights. */
export function policyOf(job: Pick<JobSetup, 'input' | 'cfg'>, weights: WeightsInfo): PolicyRef {
  const remote = job.cfg.inference.engine === 'openai' ? job.cfg.inference.openai : undefined;
  return {
    weights,
    ...(job.input.inferenceQueue !== undefined ? { inferenceQueue: job.input.inferenceQueue } : {}),
    ...(remote ? { remote } : {}),
  };
}

/** What continue-as-new carries to the next run of the job. */
export function carryOf(job: Job): PlanActJobCarry {
  return {
    config: job.cfg,
    weights: job.weights,
    completed: job.state.completed,
    fallbacks: job.state.fallbacks,
    ...(job.checkpoint ? { checkpoint: job.checkpoint } : {}),
    ...(job.start ? { start: job.start } : {}),
    ...(job.trains ? { evals: job.evals } : {}),
  };
}
