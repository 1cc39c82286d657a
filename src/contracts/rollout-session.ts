/**
 * Dual mode's rollout session (rolloutSession): the barrier where a planner job and an actor job
 * arrive, the terms both must share, and what the session delivers to each, or why a job fell back.
 */
import type { RunConfig } from '../config/schema';
import type { PlanActRoleName } from './plan-act-episode';
import type { RolloutSummary } from './rollout-summary';
import type { SampleSetRef } from './sample-set';
import type { PolicyRef } from './weights';

/** Why a job fell back (or, with fallbackOnTimeout off, failed). */
export type FallbackReason =
  /** The partner job did not arrive within barrierTimeoutSec. */
  | 'partner-missing'
  /** The partner job arrived, then stopped running (terminated, failed) before the rollout was delivered. */
  | 'partner-lost'
  /** The episodes did not finish within rolloutTimeoutSec. */
  | 'rollout-timeout'
  /** The session never answered within barrierTimeoutSec + rolloutTimeoutSec (session terminated). */
  | 'session-unresponsive'
  /** The rollout failed for infrastructure reasons (activities failing after their retries). */
  | 'session-failed';

/** What a job hands the session when it arrives. */
export interface Arrival {
  role: PlanActRoleName;
  jobWorkflowId: string;
  /**
   * The job's first execution run id: a job started again under the same workflow id is another
   * arrival, not a retry of the first one's (absent in arrivals recorded before it existed).
   */
  jobRunId?: string;
  policy: PolicyRef;
  /** The job's rollout terms; both jobs must agree on them. */
  terms: RolloutTerms;
}

/** The part of the config both jobs must share for a joint rollout to mean the same thing to each. */
export interface RolloutTerms {
  experiment: string;
  seed: number;
  task: RunConfig['task'];
  rollout: Omit<RunConfig['rollout'], 'fallbackOnTimeout'>;
  rl: Pick<RunConfig['rl'], 'promptsPerStep' | 'groupSize' | 'temperature' | 'topP' | 'maxNewTokens'>;
}

export interface ArrivalAck {
  sessionWorkflowId: string;
  sessionRunId: string;
  /** Roles present once this arrival was recorded. */
  present: PlanActRoleName[];
}

export interface RolloutSessionInput {
  experiment: string;
  rolloutId: number;
  /** Config of the first job to arrive; the second must agree on its RolloutTerms. */
  config: RunConfig;
}

export type SessionPhase = 'waiting' | 'running' | 'delivering' | 'done';

export type SessionOutcome = 'completed' | Exclude<FallbackReason, 'session-unresponsive'>;

export interface SessionArrivalInfo {
  jobWorkflowId: string;
  weightsVersion: number;
  /** Workflow time of the arrival, ms since the epoch. */
  arrivedAt: number;
  delivered: boolean;
  /** The job stopped running: a signal to it failed. */
  unreachable?: boolean;
}

export interface RolloutSessionState {
  experiment: string;
  rolloutId: number;
  phase: SessionPhase;
  arrivals: Partial<Record<PlanActRoleName, SessionArrivalInfo>>;
  /** Workflow time when both roles were present. */
  barrierMetAt?: number;
  outcome?: SessionOutcome;
  message?: string;
  summary?: Omit<RolloutSummary, 'samples'>;
}

/** What the session signals back to each job: its outcome and only its own role's samples. */
export interface SessionDelivery {
  rolloutId: number;
  sessionWorkflowId: string;
  outcome: SessionOutcome;
  message?: string;
  episodes: number;
  meanReward: number;
  samples?: SampleSetRef;
}

export interface RolloutSessionResult {
  rolloutId: number;
  outcome: SessionOutcome;
  message?: string;
  arrivals: RolloutSessionState['arrivals'];
  summary?: Omit<RolloutSummary, 'samples'>;
}
