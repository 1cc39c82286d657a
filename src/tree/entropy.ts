/**
 * Uncertainty at a branch point. A node's own `entropy` describes the first tokens it generated,
 * that is, how unsure the policy was right after its parent's context (prompt or tool result). So
 * the uncertainty *at* a node, the thing entropy-guided expansion looks for (TreeRL's EPTree
 * branches where the policy hesitates), is measured by the nodes that continued from it.
 */
import { getNode } from './queries';
import type { Forest } from './types';

/** Mean `entropy` of the generated (non-pending) children of `id`; 0 when it has none. */
export function branchEntropy(forest: Forest, id: string): number {
  let sum = 0;
  let count = 0;
  for (const childId of getNode(forest, id).children) {
    const child = getNode(forest, childId);
    if (child.status === 'pending') continue;
    sum += child.entropy;
    count++;
  }
  return count === 0 ? 0 : sum / count;
}
