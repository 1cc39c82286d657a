/**
 * Small readable numbers about a forest: what the treeState query shows in the Web UI while a
 * rollout runs, and what the bench compares between tree search and independent sampling.
 */
import { treeNodeIds } from './queries';
import type { Forest, SegmentEnd } from './types';

export interface TreeSummary {
  /** Root id, `r<index>`. */
  root: string;
  /** Segments in the tree, any status (the root, which generates nothing, not counted). */
  nodes: number;
  leaves: number;
  /** Open nodes, the root included: the points expansion may branch from (= toolCalls + 1). */
  open: number;
  pending: number;
  maxDepth: number;
  /** Tool calls executed in the tree (segments that ended in one). */
  toolCalls: number;
  generatedTokens: number;
  /** Segments cut at tree.segmentTokens inside a turn (open, continued). */
  splits: number;
  /** How leaves ended, for the ends that occurred ('eos', 'length', 'tool-limit', 'bad-tool-call'). */
  ends: Partial<Record<SegmentEnd, number>>;
}

/** One summary per tree, in root order. */
export function forestSummary(forest: Forest): TreeSummary[] {
  return forest.roots.map((rootId, r) => {
    const s: TreeSummary = { root: rootId, nodes: 0, leaves: 0, open: 0, pending: 0, maxDepth: 0, toolCalls: 0, splits: 0, generatedTokens: 0, ends: {} };
    for (const id of treeNodeIds(forest, r)) {
      const n = forest.nodes[id]!;
      if (n.depth > 0) s.nodes++;
      if (n.status === 'leaf') s.leaves++;
      if (n.status === 'open') s.open++;
      if (n.status === 'pending') s.pending++;
      if (n.end === 'tool-call') s.toolCalls++;
      else if (n.end === 'segment-length') s.splits++;
      else if (n.end !== undefined) s.ends[n.end] = (s.ends[n.end] ?? 0) + 1;
      s.maxDepth = Math.max(s.maxDepth, n.depth);
      s.generatedTokens += n.generatedTokens;
    }
    return s;
  });
}

/** Tokens generated over the forest, or over tree `root` alone: the cost tree search is judged by. */
export function generatedTokens(forest: Forest, root?: number): number {
  const ids = root === undefined ? forest.roots.flatMap((_, r) => treeNodeIds(forest, r)) : treeNodeIds(forest, root);
  return ids.reduce((total, id) => total + forest.nodes[id]!.generatedTokens, 0);
}
