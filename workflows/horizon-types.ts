/** Inputs and results of the horizon workflows (grid world with plan horizons): small, readable data. */
import type { BlobRef } from '../src/domain/types';
import type { RunConfig } from '../src/config/schema';
import type { ChunkRecord } from '../src/horizon/episode';
import type { Cell } from '../src/tasks/grid/layout';
import type { PolicyRef } from '../src/contracts/weights';

export interface HorizonRolloutInput {
  runId: string;
  rolloutId: number;
  config: RunConfig;
  policy: PolicyRef;
}

export interface HorizonEpisodeInput {
  episodeId: string;
  groupId: string;
  /** The layout (rows joined by '/', A = start, G = goal): the grid reads in the Web UI. */
  layoutId: string;
  /** This episode's plan horizon H (assigned by cycling horizon.actionHorizonsPattern). */
  horizon: number;
  numActionChunks: number;
  maxSteps: number;
  usePlanReward: boolean;
  planRewardCoef: number;
  baseH: number;
  policy: PolicyRef;
  sampling: { temperature: number; topP: number };
  seed: number;
  timeouts: RunConfig['timeouts'];
}

/** One plan as the episode's result shows it; its tokens stay in the blob store. */
export interface HorizonPlanDigest {
  planIndex: number;
  at: Cell;
  text: string;
  tokens: BlobRef;
  weightVersion: number;
  error?: string;
}

export interface HorizonEpisodeDigest {
  episodeId: string;
  groupId: string;
  layoutId: string;
  horizon: number;
  success: boolean;
  steps: number;
  reward: { task: number; plan: number; total: number };
  failure?: string;
  plans: HorizonPlanDigest[];
  /** Every chunk sent, in order, each naming its plan (planIndex) and its offset in it. */
  chunks: ChunkRecord[];
}
