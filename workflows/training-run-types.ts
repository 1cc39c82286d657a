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
}

/** State carried across continue-as-new (and usable to resume a run). */
export interface RunState {
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
  dataset?: BlobRef;
  losses: LossPoint[];
  evals: EvalPoint[];
}

export interface TrainingRunResult {
  experiment: string;
  backend: string;
  sftSteps: number;
  finalLoss?: number;
  losses: LossPoint[];
  evals: EvalPoint[];
  final?: EvalPoint;
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
}
