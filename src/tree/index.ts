/**
 * Offline tree-search rollouts (docs/tree-rollouts.md), pure: no Temporal, no I/O, no clock, no
 * Math.random (randomness comes in as a seeded Rng), so the tree-rollout workflow can import all
 * of it and replay it. The workflow drives generate and tool activities over these values.
 */
export * from './types';
export * from './errors';
export * from './ids';
export { buildForest, addBranch } from './build';
export { completeSegment, scoreLeaf } from './complete';
export { getNode, rootNode, treeNodeIds, pendingNodes, expandable, leaves, pathTo } from './queries';
export { branchEntropy } from './entropy';
export { selectExpansionNodes, DEFAULT_ENTROPY_FLOOR, type ExpansionMode, type ExpansionOptions } from './select';
export { sampleOutputs, type TreeOutput } from './outputs';
export { checkInvariants } from './invariants';
export { treeAdvantages, nodeValues, type TreeAdvantageOptions, type NodeValue } from './advantages';
export { forestSummary, generatedTokens, type TreeSummary } from './summary';
export { readSegment, segmentBudget, withToolOutcome, type SegmentLimits, type SegmentRead, type SegmentText } from './segment';
