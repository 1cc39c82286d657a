/** Plain data the treeRollout workflow takes and shows (its input, phase and tree skeleton). */
import type { RunConfig } from '../config/schema';
import type { TreeNode } from '../tree';
import type { PolicyRef } from './weights';

export interface TreeRolloutInput {
  /** Owner of the samples (the training run). */
  runId: string;
  rolloutId: number;
  config: RunConfig;
  policy: PolicyRef;
}

export type TreePhase = 'build' | 'initial-chains' | 'expansion' | 'outputs' | 'done';

/** What the treeState query returns: the phase, per-root counts, and every node without its token blob. */
export interface TreeRolloutState {
  phase: TreePhase;
  /** Expansion round, 1-based (0 outside phase 3). */
  iteration: number;
  summary: unknown;
  nodes?: Array<Omit<TreeNode, 'segment'>>;
}

/** The tree part of a tree rollout's summary: what a tree cost and yielded. */
export interface TreeRolloutCounts {
  /** Segments generated (roots excluded). */
  nodes: number;
  leaves: number;
  generatedTokens: number;
  /** Outputs that repeat a leaf because its root had fewer leaves than tree.samplesPerRoot. */
  duplicates: number;
  /** Prompt tokens of all generate calls, and those the inference worker's prefix cache served. */
  promptTokens?: number;
  cachedPromptTokens?: number;
}
