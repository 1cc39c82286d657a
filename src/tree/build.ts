/**
 * Creating nodes: the roots with their initial branches (phase 1), and a new pending branch under
 * an open node (a tool call's continuation in phase 2, an expansion in phase 3).
 *
 * Forests are values: these functions return a new Forest and leave their input untouched. Nodes
 * that did not change are shared between the two, so a step costs one shallow copy of the node
 * record rather than a deep copy of the forest.
 */
import { TreeError } from './errors';
import { childId, rootId } from './ids';
import { getNode } from './queries';
import type { Forest, TreeNode } from './types';

/** A copy of `forest` with `changed` nodes put in (by id, replacing or adding). */
export function withNodes(forest: Forest, changed: readonly TreeNode[]): Forest {
  const nodes = { ...forest.nodes };
  for (const n of changed) nodes[n.id] = n;
  return { nodes, roots: forest.roots };
}

function pendingChild(parent: TreeNode): TreeNode {
  return {
    id: childId(parent.id, parent.children.length + 1),
    root: parent.root,
    parent: parent.id,
    depth: parent.depth + 1,
    status: 'pending',
    children: [],
    generatedTokens: 0,
    envTokens: 0,
    // The calls already on its path; completeSegment adds its own.
    toolCalls: parent.toolCalls,
    entropy: 0,
  };
}

function requireCount(value: number, what: string, min: number): void {
  if (!Number.isInteger(value) || value < min) throw new TreeError('bad-argument', null, `${what} must be an integer >= ${min}, got ${value}`);
}

/**
 * Phase 1: `rootCount` trees, each an open root (the prompt) with `initialRollouts` pending
 * children: a number for every root, or one number per root (dynamic rollouts).
 */
export function buildForest(rootCount: number, initialRollouts: number | readonly number[]): Forest {
  requireCount(rootCount, 'rootCount', 0);
  if (typeof initialRollouts !== 'number' && initialRollouts.length !== rootCount) {
    throw new TreeError('bad-argument', null, `initialRollouts lists ${initialRollouts.length} counts for ${rootCount} roots`);
  }
  const nodes: Record<string, TreeNode> = {};
  const roots: string[] = [];
  for (let r = 0; r < rootCount; r++) {
    const branches = typeof initialRollouts === 'number' ? initialRollouts : initialRollouts[r]!;
    requireCount(branches, `initialRollouts of root ${r}`, 1);
    const root: TreeNode = {
      id: rootId(r),
      root: r,
      parent: null,
      depth: 0,
      status: 'open',
      children: [],
      generatedTokens: 0,
      envTokens: 0,
      toolCalls: 0,
      entropy: 0,
    };
    roots.push(root.id);
    nodes[root.id] = root;
    for (let k = 0; k < branches; k++) {
      const child = pendingChild(root);
      root.children.push(child.id);
      nodes[child.id] = child;
    }
  }
  return { nodes, roots };
}

/**
 * A new pending child of `parentId`, which must be open (the root, or a segment that ended in a
 * tool call): a leaf has nothing to continue and a pending node has no context yet.
 */
export function addBranch(forest: Forest, parentId: string): { forest: Forest; id: string } {
  const parent = getNode(forest, parentId);
  if (parent.status !== 'open') throw new TreeError('not-open', parentId, `cannot branch from a ${parent.status} node`);
  const child = pendingChild(parent);
  return { forest: withNodes(forest, [{ ...parent, children: [...parent.children, child.id] }, child]), id: child.id };
}
