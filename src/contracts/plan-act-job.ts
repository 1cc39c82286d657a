/**
 * The Plan/Act job (planActJob): its input, state and result, and what it records of each rollout
 * and update. How it meets its partner in dual mode is rollout-session.ts.
 */
import type { RunConfigInput } from '../config/schema';
import type { PlanActRoleName } from './plan-act-episode';
import type { FallbackReason, SessionPhase } from './rollout-session';
import type { SampleSets } from './sample-set';
import type { CheckpointInfo, WeightsInfo } from './weights';

export type JobRole = PlanActRoleName | 'shared';

export interface PlanActJobInput {
  /** planner / actor: dual mode, meeting the partner job per rollout id; shared: one policy, both roles. */
  role: JobRole;
  /** The run config inline (every field optional)... */
  config?: RunConfigInput;
  /** ...or a YAML/JSON config file, read by the orchestration worker (relative to its repository). */
  configFile?: string;
  /** Rollouts to take part in, in order; default [1]. */
  rolloutIds?: number[];
  /** This job's policy. Default: weightsFromRun, else a fresh policy from config.model and seed. */
  weights?: WeightsInfo;
  /** Use the latest weights a run published (e.g. the trainingRun workflow id of an SFT run). */
  weightsFromRun?: string;
  /** Inference workers serving this job's weights; default: the inference queue. */
  inferenceQueue?: string;
  /**
   * Train this job's policy with GRPO on its own samples after every rollout and publish the new
   * weights for the next one (default true). Needs a checkpoint: not available with `weights`.
   */
  train?: boolean;
  /** With weightsFromRun and train: that run's checkpoint at this step (default its latest). */
  fromStep?: number;
}

/** A training job's held-out evaluation of its own weights (oracle-forced planner and actor accuracy, end to end). */
export interface JobEvalPoint {
  /** Rollouts this job had trained on when it evaluated (0 = its starting weights). */
  afterRollouts: number;
  weightVersion: number;
  plannerAccuracy: number;
  actorAccuracy: number;
  episodeAccuracy: number;
}

/** One GRPO update a job made after a rollout. */
export interface JobTrainingStep {
  /** The job's checkpoint step after the update. */
  step: number;
  loss: number;
  rows: number;
  clipFraction: number;
  /** Weights version published with the update (served in the job's next rollout). */
  weightVersion: number;
}

/** How a job got its samples for one rollout. */
export type RolloutOutcome = 'joint' | 'shared' | 'fell-back';

export interface JobRolloutResult {
  rolloutId: number;
  outcome: RolloutOutcome;
  reason?: FallbackReason;
  message?: string;
  sessionWorkflowId?: string;
  episodes: number;
  meanReward: number;
  /** Only this job's own samples: planner or actor in dual mode, both in shared mode, single on fallback. */
  samples: SampleSets;
  /** Weights version this job's policy played the rollout with. */
  weightVersion?: number;
  /** The update the job trained on these samples (train: true). */
  training?: JobTrainingStep;
}

export interface PlanActJobResult {
  experiment: string;
  role: JobRole;
  weights: WeightsInfo;
  /** Training jobs: evaluations of their own weights, at the start and every eval.rlEverySteps rollouts. */
  evals?: JobEvalPoint[];
  rollouts: JobRolloutResult[];
  fallbacks: number;
}

export type JobPhase = 'setup' | 'arriving' | 'waiting' | 'rollout' | 'fallback' | 'training' | 'done';

export interface PlanActJobState {
  role: JobRole;
  phase: JobPhase;
  rolloutId?: number;
  /** What the session last told this job about its phase. */
  sessionPhase?: SessionPhase;
  completed: JobRolloutResult[];
  remaining: number[];
  fallbacks: number;
  weights?: WeightsInfo;
  /** The job's training checkpoint (jobs that train). */
  checkpoint?: CheckpointInfo;
  evals?: JobEvalPoint[];
  /** What a person should know that fails nothing: e.g. a rollout that gave this job's role no samples. */
  warnings?: string[];
}
