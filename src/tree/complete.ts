/**
 * Recording what happened to a node: the outcome of its generate call (phase 2 and 3) and, for a
 * leaf, its reward. Each is recorded once: a second completion or score means the driver lost
 * track of a node (a replayed activity result applied twice, say), which must fail loudly rather
 * than silently overwrite a segment that other nodes already continue from.
 */
import { withNodes } from './build';
import { TreeError } from './errors';
import { getNode } from './queries';
import { keepsOpen, SEGMENT_ENDS, type Forest, type SegmentOutcome, type TreeNode } from './types';

/** Entropies are normalised to [0, 1]; this much float noise above 1 is accepted as is. */
const ENTROPY_SLACK = 1e-9;

function requireTokens(id: string, value: number, what: string): void {
  if (!Number.isInteger(value) || value < 0) throw new TreeError('bad-argument', id, `${what} must be an integer >= 0, got ${value}`);
}

/**
 * Records the outcome of pending node `id`'s generation. It becomes 'open' when the segment ended
 * in an executed tool call (whose result is appended to it) or was cut at tree.segmentTokens, a
 * 'leaf' otherwise; its toolCalls is its parent's plus one for a tool call. The caller adds the
 * continuation with addBranch.
 */
export function completeSegment(forest: Forest, id: string, outcome: SegmentOutcome): Forest {
  const node = getNode(forest, id);
  if (node.status !== 'pending') throw new TreeError('not-pending', id, `only a pending node can be completed; this one is ${node.status}`);
  requireTokens(id, outcome.generatedTokens, 'generatedTokens');
  requireTokens(id, outcome.envTokens, 'envTokens');
  if (!Number.isFinite(outcome.entropy) || outcome.entropy < 0 || outcome.entropy > 1 + ENTROPY_SLACK) {
    throw new TreeError('bad-argument', id, `entropy must be a normalised value in [0, 1], got ${outcome.entropy}`);
  }
  if (!SEGMENT_ENDS.includes(outcome.end)) throw new TreeError('bad-argument', id, `unknown segment end ${JSON.stringify(outcome.end)}`);
  const parent = getNode(forest, node.parent!);
  const toolCall = outcome.end === 'tool-call';
  const done: TreeNode = {
    ...node,
    status: keepsOpen(outcome.end) ? 'open' : 'leaf',
    generatedTokens: outcome.generatedTokens,
    envTokens: outcome.envTokens,
    entropy: outcome.entropy,
    toolCalls: parent.toolCalls + (toolCall ? 1 : 0),
    end: outcome.end,
  };
  if (outcome.segment) done.segment = { sha256: outcome.segment.sha256, bytes: outcome.segment.bytes, kind: outcome.segment.kind };
  return withNodes(forest, [done]);
}

/** Records the reward of leaf `id` (the outcome of its root-to-leaf path), once. */
export function scoreLeaf(forest: Forest, id: string, reward: number): Forest {
  const node = getNode(forest, id);
  if (node.status !== 'leaf') throw new TreeError('not-leaf', id, `only a leaf carries a reward; this node is ${node.status}`);
  if (node.reward !== undefined) throw new TreeError('already-scored', id, `already has reward ${node.reward}`);
  if (!Number.isFinite(reward)) throw new TreeError('bad-argument', id, `reward must be a finite number, got ${reward}`);
  return withNodes(forest, [{ ...node, reward }]);
}
