/** Plain data that trainingRun shows through its progress query and returns as its result. */
import type { HorizonSuccess } from '../horizon/metrics';
import type { TimelineCounts } from '../timeline/counts';
import type { CheckpointInfo, LossPoint, PolicyRef, WeightsInfo } from './weights';
import type { RolloutSummary } from './rollout-summary';
import type { TreeRolloutCounts } from './tree';
import type { BlobRef } from '../domain/types';
import type { RunTrackingState, TensorboardState } from './tracking';
import type { EvalReport } from '../eval/report';
import type { Accuracy, ToolUse } from '../eval/accuracy';




/** How an RL step used the trainer and the inference workers, and how stale its samples were (rl.async). */
export interface RlStepSchedule {
  /** rl.async.maxStaleness the run used (0: synchronous). */
  maxStaleness: number;
  /** Trained samples per staleness: weight versions between the trained policy and the one that generated them. */
  staleness: Record<string, number>;
  /** Samples not trained because they were more than maxStaleness versions old. */
  droppedStale: number;
  /**
   * Samples given to the update whose calls ran on more than one weight version: a rollout in flight
   * on a synced remote server went on with the newer weights synced meanwhile (metadata.weightVersions).
   */
  partial?: number;
  /** Share of the step's wall time the trainer waited for the rollout. */
  trainerIdle: number;
  /** Share of the step's wall time no rollout was running. */
  inferenceIdle: number;
  /** Off-policy correction: trained tokens whose weight the cap changed, and the mean weight. */
  capped?: number;
  meanWeight?: number;
}

/** One GRPO step: its rollout and its update (also one line of the run's metrics file). */
export interface RlPoint {
  /** RL step, 1-based (the checkpoint it produced is at global step SFT steps + this). */
  step: number;
  /** Weights version the rollout's episodes were generated with. */
  weightVersion: number;
  /** Mean episode reward of the rollout (all its batches). */
  meanReward: number;
  /** Share of the rollout's episodes with a correct answer (reward > 0). */
  accuracy: number;
  /** Dynamic sampling: rollout batches run, and groups with reward spread kept for training. */
  rolloutBatches?: number;
  keptGroups?: number;
  loss: number;
  /** Training rows (samples) in the update; flat groups train with advantage 0. */
  rows: number;
  /** Samples with no trained token (empty or fully masked response), left out. */
  skipped: number;
  clipFraction: number;
  /** The update's other numbers (clip fractions, KL, entropy, grad norm, tokens...), as the trainer reports them. */
  update?: Record<string, number>;
  /** Timeline merging of the step's samples: calls captured, samples trained, tokens before and after. */
  timelines?: TimelineCounts;
  /** Tree rollouts: the step's tree (nodes, leaves, generated tokens, duplicate outputs). */
  tree?: TreeRolloutCounts;
  /** Horizon rollouts: the step's success per plan horizon. */
  horizon?: HorizonSuccess[];
  /** Asynchronous RL: the step's staleness, drops and idle shares. */
  schedule?: RlStepSchedule;
  /** Wall time of the step's phases, seconds (workflow time around each activity or child). */
  /** sync: loading the new weights into the remote server (inference.openai.weightSync), inside publish's share of the step. */
  seconds: { publish: number; rollout: number; train: number; sync?: number };
}

/** An RL step as trainingRun recorded it before the 'training-run-v2' patch (kept for replaying old runs). */
export type RlPointV1 = Omit<RlPoint, 'accuracy' | 'seconds' | 'update'>;

/** End-to-end accuracy on held-out problems of the RL distribution, at an RL step (0 = the checkpoint RL starts from). */
export interface RlEvalPoint {
  step: number;
  weightVersion: number;
  greedy: Accuracy;
  sampled?: Accuracy;
  /** Grid world: success per plan horizon, greedy (and sampled). */
  byHorizon?: HorizonSuccess[];
  sampledByHorizon?: HorizonSuccess[];
  failures: Record<string, number>;
  example: string;
  /** pass@1...pass@n with n sampled episodes per problem (test evaluations, eval.passAtK). */
  passAtK?: number[];
  /** Greedy episodes' tool use (arithmetic). */
  tools?: ToolUse;
  /** Test evaluations: greedy correctness per problem, '1'/'0' in problem order. */
  perProblem?: string;
}

/**
 * An SFT baseline from the checkpoint RL started from (compare.moreSft, compare.filteredSft): SFT
 * steps trained in its budget (compare.sftBudget) and the seconds they took.
 */
export interface SftBaseline {
  steps: number;
  /** Demonstrations trained (steps x sft.batchSize); absent in runs recorded before fixed budgets. */
  sequences?: number;
  seconds: number;
  /** rl-wall-time budgets: RL's seconds. */
  budgetSeconds?: number;
  /** rl-trained-tokens budgets: the loss-masked tokens SFT trained, and RL's it was to match. */
  trainedTokens?: number;
  budgetTokens?: number;
  /** Validation evaluation of the result. */
  eval: RlEvalPoint;
  /** The result's weights (for the test evaluation); absent in runs recorded before it. */
  weights?: WeightsInfo;
}

/** compare.rft: RL's steps and prompts, fitting the correct episodes only. */
export interface RftBaseline {
  steps: number;
  /** Episodes generated (RL's budget) and samples fitted (the correct episodes' samples). */
  episodes: number;
  trainedSamples: number;
  seconds: number;
  eval: RlEvalPoint;
  weights: WeightsInfo;
}

/** Where an RFT baseline is, saved with the run state after each of its steps. */
export interface RftProgress {
  step: number;
  checkpoint: CheckpointInfo;
  episodes: number;
  trainedSamples: number;
  seconds: number;
}

/** The policies a run compares: the start of RL, its end, and each compare.* baseline. */
export type ComparedPolicy = 'sftOnly' | 'rl' | 'moreSft' | 'filteredSft' | 'rft';

/** One compared policy on the test problems (task.rl.testProblems), evaluated once. */
export type TestEvaluation = Omit<RlEvalPoint, 'step'>;

/** One policy's numbers in the comparison. */
export interface ComparedResult {
  greedy: Accuracy;
  sampled?: Accuracy;
  byHorizon?: HorizonSuccess[];
  /** Test evaluations with eval.passAtK: pass@1...pass@k of sampled episodes. */
  passAtK?: number[];
  /** Test evaluations: acts that called the calculator and accuracy split by tool use (greedy). */
  tools?: ToolUse;
  /** Greedy correctness per test problem ('1'/'0', in problem order): paired differences between policies. */
  perProblem?: string;
  /** Training spent: SFT steps (baselines), RL or RFT steps, and their seconds. */
  steps?: number;
  seconds?: number;
  /** Loss-masked tokens trained: RL's (each batch's once), and an SFT baseline's under compare.sftBudget rl-trained-tokens. */
  trainedTokens?: number;
}

/**
 * SFT only vs SFT + RL vs each baseline, on the RL distribution's held-out problems: the test
 * problems (split: test), or for runs recorded before the test split the validation evaluations.
 */
export interface Comparison {
  problems: number;
  /** Absent: validation (runs recorded before the test split). */
  split?: 'test';
  sftOnly: ComparedResult;
  moreSft?: ComparedResult;
  filteredSft?: ComparedResult;
  rft?: ComparedResult;
  rl: ComparedResult;
}

export interface EvalPoint extends EvalReport {
  step: number;
  weightVersion: number;
}

export type RunPhase = 'prepare' | 'sft' | 'eval' | 'rl' | 'more-sft' | 'filtered-sft' | 'rft' | 'test' | 'report' | 'done';

export interface RunProgress {
  phase: RunPhase;
  step: number;
  totalSteps: number;
  lastLoss?: number;
  weightVersion: number;
  lastEval?: EvalPoint;
  /** RL phase only: the last RL step finished and its rollout's mean episode reward and accuracy. */
  rlStep?: number;
  lastReward?: number;
  lastAccuracy?: number;
  /** The latest evaluation on the RL distribution. */
  lastRlEval?: RlEvalPoint;
  /** The last RL step's schedule: staleness, idle shares (rl.async). */
  lastSchedule?: RlStepSchedule;
}

/** State carried across continue-as-new (and usable to resume a run). */
export interface RunState {
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
  dataset?: BlobRef;
  losses: LossPoint[];
  evals: EvalPoint[];
  /** Absent in states carried over by runs from before the RL phase existed. */
  rl?: RlPoint[];
  /** RL steps finished (rl holds only the last few points). */
  rlDone?: number;
  /** The checkpoint RL started from: KL reference and the more-SFT baseline's start. */
  rlStart?: CheckpointInfo;
  rlEvals?: RlEvalPoint[];
  /** RL wall time so far (publish + rollout + train), the more-SFT baseline's budget. */
  rlSeconds?: number;
  /** Loss-masked tokens RL's updates trained so far (each batch's once), for compare.sftBudget rl-trained-tokens. */
  rlTrainedTokens?: number;
  moreSft?: SftBaseline;
  filteredSft?: SftBaseline;
  rft?: RftBaseline;
  /** compare.rft in progress (a resumed run goes on from its last step). */
  rftProgress?: RftProgress;
  /** Test evaluations done so far, by policy (each once). */
  test?: Partial<Record<ComparedPolicy, TestEvaluation>>;
  /** Asynchronous RL: rollouts of later steps finished before a continue-as-new, trained after it. */
  pendingRollouts?: PendingRollout[];
  /** tracking.mlflow: the run's MLflow run (workflows/training-run/tracker.ts). */
  tracking?: RunTrackingState;
  /** tracking.tensorboard: the run's event-file folder (workflows/tensorboard-log.ts). */
  tensorboard?: TensorboardState;
}

/** One RL step's rollout: its batches and, with dynamic sampling, the groups kept. */
export interface StepRollouts {
  rollouts: RolloutSummary[];
  keepGroups: string[];
}

export interface PendingRollout {
  step: number;
  policy: PolicyRef;
  got: StepRollouts;
  /** Workflow time (ms) the rollout started and ended. */
  started: number;
  ended: number;
}

/** How trainingRun's second argument resumes a run: a carried state (continue-as-new) or the state saved in the blob store. */
export type TrainingRunResume = RunState | { fromSavedState: true };

export interface TrainingRunResult {
  experiment: string;
  /** Present when the run did RL: the three policies side by side on the RL distribution. */
  comparison?: Comparison;
  /** Where the run's per-step metrics (JSONL) and curves (PNG) are, on the orchestration worker's host. */
  metricsFile?: string;
  curvesPng?: string;
  backend: string;
  sftSteps: number;
  rlSteps: number;
  finalLoss?: number;
  losses: LossPoint[];
  evals: EvalPoint[];
  rl: RlPoint[];
  rlEvals: RlEvalPoint[];
  final?: EvalPoint;
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
}
