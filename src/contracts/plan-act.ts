/**
 * Plain data that the Plan/Act workflows (episode, rollout, session, job, fallback) take and return.
 * Everything is small and readable: this is what the Web UI shows as inputs and results, so token
 * arrays stay in the blob store and only references, counts and short text travel here.
 */
import type { HorizonSuccess } from '../horizon/metrics';
import type { TimelineCounts } from '../timeline/counts';
import type { TreeRolloutCounts } from './tree';
import type { RunConfig, RunConfigInput } from '../config/schema';
import type { AgentRole, BlobRef, RemoteEngineRef } from '../domain/types';
import type { EpisodeFailure, EpisodeLimits } from '../planact/episode-types';
import type { CheckpointInfo, PolicyRef, WeightsInfo } from './weights';

export type PlanActRoleName = 'planner' | 'actor';


/** Samples of one role written to the blob store (claim check); the history keeps this much. */
export interface SampleSetRef {
  role: AgentRole;
  ref: BlobRef;
  samples: number;
  responseTokens: number;
  meanReward: number;
  /** Timeline merging of these samples (absent when written one sample per policy call). */
  timelines?: TimelineCounts;
}

export type { TimelineCounts };

export type SampleSets = Partial<Record<AgentRole, SampleSetRef>>;

/** Calculator calls of an episode or rollout, as the tools queue served them. */
export interface ToolMetrics {
  calls: number;
  /** Calls that returned an error to the actor (bad input, or a tool still failing after retries). */
  failures: number;
  /** Extra attempts Temporal made on top of the first one. */
  retries: number;
  /** Summed wall time of the calls (workflow time). */
  ms: number;
}

export interface ActDigest {
  id: string;
  expression: string;
  /** The act's answer as the planner reads it in its RESULT line. */
  result?: string;
  failure?: string;
  toolCalls: number;
  toolFailures: number;
  /** When the act started and ended, ms after the episode started (workflow time). */
  startMs: number;
  endMs: number;
}

export interface TurnDigest {
  turn: number;
  /** The planner's text for this turn, as generated (shortened when long). */
  plan: string;
  kind: 'acts' | 'answer' | 'invalid';
  acts: ActDigest[];
  /** RESULT lines appended to the planner's context after the acts. */
  results: string;
}

export interface EpisodeRunMetrics {
  turns: number;
  acts: number;
  generations: number;
  maxConcurrentActs: number;
  tools: ToolMetrics;
  episodeMs: number;
  /** Sum of act durations; above the turn's wall time when acts overlapped. */
  actMsTotal: number;
}

export interface PlanActEpisodeInput {
  /** How the episode's timelines are merged into samples (absent: one sample per call, as before capture). */
  timeline?: RunConfig['timeline'];
  /** Owner of the samples (a job or session id); used in blob names and episode ids. */
  runId: string;
  episodeId: string;
  /** Arithmetic problem, canonical form ("17+25+8"). */
  expression: string;
  /** GRPO group: episodes of the same prompt share it. */
  groupId?: string;
  policies: Record<PlanActRoleName, PolicyRef>;
  limits: EpisodeLimits;
  sampling: { temperature: number; topP: number };
  /** Seeds every generation of the episode (see src/planact/sampling-seed.ts); absent = unseeded. */
  seed?: number;
  timeouts: RunConfig['timeouts'];
  /** rollout.plannerCredit correct-results (absent: outcome, as episodes recorded before it). */
  plannerCredit?: 'correct-results';
  /** rollout.batchRequests false: one activity per call (absent: the calls of an activation batched). */
  batchRequests?: false;
}

export interface PlanActEpisodeResult extends PlanActEpisodeDigest {
  samples: SampleSets;
}

/** A GRPO group's episodes, run in one workflow, with one sample set per role for all of them. */
export interface PlanActGroupResult {
  episodes: PlanActEpisodeDigest[];
  samples: SampleSets;
}

export interface PlanActEpisodeDigest {
  episodeId: string;
  expression: string;
  expected: number;
  status: 'answered' | 'failed';
  answer: string | null;
  reward: number;
  /** Why the episode ended without a correct-format answer (malformed plan, runaway length, ...). */
  failure?: EpisodeFailure;
  turns: TurnDigest[];
  metrics: EpisodeRunMetrics;
  /** rollout.plannerCredit correct-results: an actor's RESULT was wrong, so the planner's samples were left out. */
  plannerNotTrained?: true;
}

/** One row per episode in a rollout summary: enough to spot which problems failed and why. */
export interface EpisodeRow {
  episodeId: string;
  /** GRPO group (absent in summaries recorded before groups were listed). */
  groupId?: string;
  expression: string;
  reward: number;
  answer: string | null;
  failure?: string;
  /** rollout.plannerCredit correct-results: the planner's samples of this episode were left out. */
  plannerNotTrained?: true;
}

export type RolloutMode = 'shared' | 'dual' | 'single';

export interface RolloutSummary {
  rolloutId: number;
  mode: RolloutMode;
  episodes: number;
  answered: number;
  meanReward: number;
  /** Episodes that ended on malformed output, by failure code. */
  failures: Record<string, number>;
  metrics: {
    acts: number;
    generations: number;
    maxConcurrentActs: number;
    tools: ToolMetrics;
    meanEpisodeMs: number;
    durationMs: number;
  };
  rows: EpisodeRow[];
  samples: SampleSets;
  /** Tree rollouts: nodes, leaves and generated tokens of the trees. */
  tree?: TreeRolloutCounts;
  /** Horizon rollouts: success per plan horizon (metrics only; never in a training batch). */
  horizon?: HorizonSuccess[];
}

/** agentRollout's input: which gateway serves the policy the outside agent talks to. */
export interface AgentRolloutInput {
  runId: string;
  rolloutId: number;
  config: RunConfig;
  /** A gateway already serving the policy: the built-in openai-client agent plays against it. */
  gateway?: {
    /** Base URL of the OpenAI-compatible gateway, e.g. http://127.0.0.1:8000/v1. */
    baseUrl: string;
    model: string;
    /** The weights version it serves (written on the samples). */
    weightVersion: number;
  };
  /**
   * Or (rollout.kind: agent in trainingRun) a command run once per episode against a gateway the
   * tools worker serves on these weights.
   */
  agent?: {
    command: string[];
    timeoutSec: number;
    weights: WeightsInfo;
    /**
     * inference.engine openai: the synced server serving these weights. The tools worker puts its
     * recording proxy in front of it instead of a gateway of its own, and labels each episode with
     * the weight version the server served.
     */
    remote?: RemoteEngineRef;
  };
  /** Task queue of the workers that run agents; default the tools queue. */
  agentQueue?: string;
}

export interface PlanActRolloutInput {
  /** Owner of the samples (the job, or the session of a dual-mode rollout). */
  runId: string;
  rolloutId: number;
  /** Dynamic sampling's extra batches of a step: 1, 2, ... draw other prompts (absent = 0). */
  batch?: number;
  mode: 'shared' | 'dual';
  config: RunConfig;
  policies: Record<PlanActRoleName, PolicyRef>;
  /**
   * Episodes per child workflow: 1 gives every episode a workflow of its own (most to read in the
   * Web UI, most orchestration cost); default rl.groupSize, one child per GRPO group.
   */
  episodesPerWorkflow?: number;
}

export interface SingleAgentRolloutInput {
  runId: string;
  rolloutId: number;
  config: RunConfig;
  policy: PolicyRef;
  /** Why this rollout is single-agent (a job's fallback, or rollout.kind: standard), shown in the Web UI next to the child's input. */
  reason: string;
  /** Dynamic sampling's extra batches of new prompts (rollout.kind: standard); absent for the first. */
  batch?: number;
}

// ---- dual mode: jobs and the rollout session ----

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
