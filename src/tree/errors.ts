/**
 * Typed errors of the tree code. Workflows turn them into non-retryable failures: each one is a
 * bug in the driver (completing a node twice, branching from a leaf) or a corrupt forest, and
 * retrying the same deterministic code would only fail the same way.
 */

export type TreeErrorCode =
  /** No node with that id in the forest. */
  | 'unknown-node'
  /** No tree with that root index. */
  | 'unknown-root'
  /** Branching needs an open node (the root, or a segment that ended in a tool call). */
  | 'not-open'
  /** Only a pending node can be completed (once). */
  | 'not-pending'
  /** Only a leaf can be scored. */
  | 'not-leaf'
  | 'already-scored'
  /** Sampling outputs from a tree that has no leaf. */
  | 'no-leaves'
  /** Advantages of a tree none of whose leaves has a reward. */
  | 'no-scored-leaves'
  /** A count, entropy, reward or option out of range. */
  | 'bad-argument';

/** A tree operation that was refused; `nodeId` is the node (or root) it concerned, when there is one. */
export class TreeError extends Error {
  override readonly name = 'TreeError';
  constructor(
    readonly code: TreeErrorCode,
    readonly nodeId: string | null,
    readonly problem: string,
  ) {
    super(nodeId === null ? `${code}: ${problem}` : `${code} at ${nodeId}: ${problem}`);
  }
}

/** The structural rules checkInvariants enforces; each failure names one. */
export type InvariantRule =
  /** forest.nodes is a record and forest.roots an array. */
  | 'shape'
  /** The record key of a node is its id. */
  | 'key-matches-id'
  /** Every listed root exists, once. */
  | 'root-listed'
  /** A root has depth 0, no parent, status 'open', no segment outcome and no tool calls. */
  | 'root-shape'
  /** A node's root index is its tree's position in forest.roots (and its parent's root index). */
  | 'root-index'
  /** Ids follow positions: roots[r] = `r${r}`, the k-th child of p = `${p}.${k}`. */
  | 'id-matches-position'
  /** A node's parent exists. */
  | 'parent-exists'
  /** A node's parent lists it among its children. */
  | 'parent-lists-child'
  /** A child appears once in its parent's children. */
  | 'child-listed-once'
  /** Every listed child exists. */
  | 'child-exists'
  /** Every listed child names this node as its parent. */
  | 'child-points-back'
  /** depth = parent depth + 1. */
  | 'depth'
  /** No node is its own child or ancestor. */
  | 'no-cycle'
  /** Every node is reachable from a listed root. */
  | 'reachable'
  /** status is one of the three, end is a known SegmentEnd. */
  | 'status'
  /** pending: no end; open segment: end 'tool-call' or 'segment-length'; leaf: any other end. */
  | 'end-matches-status'
  | 'leaf-no-children'
  | 'pending-no-children'
  /** toolCalls = parent's + 1 for a segment that ended in a tool call, the parent's otherwise. */
  | 'tool-calls'
  /** Token counts are non-negative integers, entropy is in [0, 1], a reward is finite. */
  | 'counts'
  /** Only leaves carry rewards. */
  | 'reward-on-leaf';

/** A forest that breaks a structural rule: the node and the rule, for the person reading the failure. */
export class TreeInvariantError extends Error {
  override readonly name = 'TreeInvariantError';
  constructor(
    readonly nodeId: string,
    readonly rule: InvariantRule,
    readonly problem: string,
  ) {
    super(`tree invariant ${rule} broken at ${nodeId}: ${problem}`);
  }
}
