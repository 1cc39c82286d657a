/** Plain data that trainingRun shows through its progress query and returns as its result. */
import type { BlobRef } from '../src/domain/types';
import type { EvalReport } from '../activities/evaluation-types';

export interface CheckpointInfo {
  /** Blob-store name, e.g. runs/<runId>/ckpt/step-000100. */
  name: string;
  ref: BlobRef;
  step: number;
}

export interface WeightsInfo {
  version: number;
  /** Training step of the checkpoint these weights were exported from. */
  step: number;
  onnx: BlobRef;
}

export interface LossPoint {
  step: number;
  loss: number;
}

/** One GRPO step: its rollout and its update. */
export interface RlPoint {
  /** RL step, 1-based (the checkpoint it produced is at global step SFT steps + this). */
  step: number;
  /** Weights version the rollout's episodes were generated with. */
  weightVersion: number;
  /** Mean episode reward of the rollout. */
  meanReward: number;
  loss: number;
  /** Training rows (samples) in the update; flat groups train with advantage 0. */
  rows: number;
  /** Samples with no trained token (empty or fully masked response), left out. */
  skipped: number;
  clipFraction: number;
}

export interface EvalPoint extends EvalReport {
  step: number;
  weightVersion: number;
}

export type RunPhase = 'prepare' | 'sft' | 'eval' | 'rl' | 'done';

export interface RunProgress {
  phase: RunPhase;
  step: number;
  totalSteps: number;
  lastLoss?: number;
  weightVersion: number;
  lastEval?: EvalPoint;
  /** RL phase only: the last RL step finished and its rollout's mean episode reward. */
  rlStep?: number;
  lastReward?: number;
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
  /** The checkpoint RL started from: the frozen reference policy of the KL loss / KL penalty. */
  rlReference?: CheckpointInfo;
}

export interface TrainingRunResult {
  experiment: string;
  backend: string;
  sftSteps: number;
  rlSteps: number;
  finalLoss?: number;
  losses: LossPoint[];
  evals: EvalPoint[];
  rl: RlPoint[];
  final?: EvalPoint;
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
}
