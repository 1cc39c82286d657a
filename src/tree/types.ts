/**
 * The shape of an offline tree-search forest (docs/tree-rollouts.md), branching at tool-call
 * boundaries as ARPO does. One tree per prompt; a node is a point after which the policy generates:
 *
 * - the root (depth 0) is the prompt itself and generates nothing;
 * - every other node is one segment: one generate call continuing from its parent's full context
 *   (the prompt plus every segment on the path, each followed by its tool result). A segment that
 *   ends in a tool call gets the tool's result appended (loss mask 0) and stays `open`: its
 *   continuation is a child, and further children may branch from it. A segment that finishes
 *   (eos, length, tool-call limit, bad tool call) is a `leaf`.
 *
 * Everything is plain JSON (records and arrays, no Map, no class) so a forest can be returned by a
 * Temporal query, carried through continue-as-new, and rebuilt identically on replay.
 */
import type { BlobRef } from '../domain/types';

/** 'pending': created, not generated yet; 'open': the root or a segment that ended in a tool call or was cut at tree.segmentTokens; 'leaf': finished. */
export type TreeNodeStatus = 'pending' | 'open' | 'leaf';

/**
 * Why a segment stopped. 'tool-call' and 'segment-length' keep the node open (a branch point):
 * 'segment-length' is a segment cut at tree.segmentTokens inside a turn that still has budget
 * (TreePO-style fixed-length segments; the design's `finish_reason == "length"` with the response
 * below its maximum), and its continuation goes on with the same turn. 'tool-limit' is a tool call
 * made when the per-node limit was already reached (not executed, so not counted in toolCalls).
 */
export type SegmentEnd = 'tool-call' | 'segment-length' | 'eos' | 'length' | 'tool-limit' | 'bad-tool-call';

export const SEGMENT_ENDS: readonly SegmentEnd[] = ['tool-call', 'segment-length', 'eos', 'length', 'tool-limit', 'bad-tool-call'];

/** Ends after which a node stays open: it has a continuation and may be branched from. */
export const OPEN_ENDS: readonly SegmentEnd[] = ['tool-call', 'segment-length'];

export function keepsOpen(end: SegmentEnd | undefined): boolean {
  return end !== undefined && OPEN_ENDS.includes(end);
}

export interface TreeNode {
  /** `r<root>` for a root, `${parent}.${k}` for its k-th child (1-based): readable in the Web UI. */
  id: string;
  /** Index of the tree (its prompt) in Forest.roots. */
  root: number;
  parent: string | null;
  depth: number;
  status: TreeNodeStatus;
  /** Child ids in creation order (the first is the initial continuation, later ones are branches). */
  children: string[];
  /** Tokens this segment generated (0 for roots and pending nodes). */
  generatedTokens: number;
  /** Tokens appended after it by the environment (its tool result). */
  envTokens: number;
  /** Tool calls executed on the path root..this node inclusive (a pending node has its parent's count). */
  toolCalls: number;
  /**
   * Mean normalised entropy (0..1) of the first tokens this segment generated: how uncertain the
   * policy was at its parent's branch point. 0 for roots and pending nodes.
   */
  entropy: number;
  end?: SegmentEnd;
  /** Blob of this segment's token ids, logprobs and loss mask (claim check; never the tokens themselves). */
  segment?: BlobRef;
  /** Leaves only, once scored. */
  reward?: number;
}

export interface Forest {
  /** Every node of every tree, by id. */
  nodes: Record<string, TreeNode>;
  /** Root ids, one per prompt, in prompt order: roots[r] === `r${r}`. */
  roots: string[];
}

/** What one generate call (plus its tool call, if any) tells the tree about a pending node. */
export interface SegmentOutcome {
  generatedTokens: number;
  envTokens: number;
  /** Mean normalised entropy (0..1) of the segment's first generated tokens. */
  entropy: number;
  end: SegmentEnd;
  segment?: BlobRef;
}
