/**
 * Read-only views of a forest. Every list comes from walking the trees from their roots in
 * preorder (children in creation order), never from the key order of `forest.nodes`, so the same
 * forest gives the same lists everywhere, which keeps the seeded draws over them replayable.
 */
import { TreeError, TreeInvariantError } from './errors';
import type { Forest, TreeNode } from './types';

/** The node with that id; a typed error, rather than undefined, for an id the forest lacks. */
export function getNode(forest: Forest, id: string): TreeNode {
  // hasOwn: an id such as 'constructor' must not find Object.prototype's members.
  if (!Object.hasOwn(forest.nodes, id)) throw new TreeError('unknown-node', id, 'no such node in the forest');
  return forest.nodes[id]!;
}

/** The root node of tree `root` (its index in forest.roots). */
export function rootNode(forest: Forest, root: number): TreeNode {
  if (!Number.isInteger(root) || root < 0 || root >= forest.roots.length) {
    throw new TreeError('unknown-root', null, `root index ${root} is not in 0..${forest.roots.length - 1}`);
  }
  return getNode(forest, forest.roots[root]!);
}

/** Ids of tree `root`, root first, in preorder. */
export function treeNodeIds(forest: Forest, root: number): string[] {
  const out: string[] = [];
  const stack = [rootNode(forest, root).id];
  while (stack.length > 0) {
    const id = stack.pop()!;
    out.push(id);
    const children = getNode(forest, id).children;
    for (let k = children.length - 1; k >= 0; k--) stack.push(children[k]!);
  }
  return out;
}

function treeNodesWith(forest: Forest, root: number, keep: (n: TreeNode) => boolean): string[] {
  return treeNodeIds(forest, root).filter((id) => keep(forest.nodes[id]!));
}

/** Nodes waiting to be generated, tree by tree: what the next round of generate calls is for. */
export function pendingNodes(forest: Forest): string[] {
  return forest.roots.flatMap((_, r) => treeNodesWith(forest, r, (n) => n.status === 'pending'));
}

/** Open nodes of tree `root`, its root included: the only points a new branch may start from. */
export function expandable(forest: Forest, root: number): string[] {
  return treeNodesWith(forest, root, (n) => n.status === 'open');
}

/** Finished segments of tree `root`: the candidate outputs. */
export function leaves(forest: Forest, root: number): string[] {
  return treeNodesWith(forest, root, (n) => n.status === 'leaf');
}

/** Ids from the root down to `id` inclusive: the segments whose text, in order, is `id`'s context. */
export function pathTo(forest: Forest, id: string): string[] {
  const path: string[] = [];
  const limit = Object.keys(forest.nodes).length;
  for (let at: string | null = id; at !== null; at = getNode(forest, at).parent) {
    // A corrupt forest with a parent cycle must fail, not loop.
    if (path.length > limit) throw new TreeInvariantError(id, 'no-cycle', 'its parent chain never reaches a root');
    path.push(at);
  }
  return path.reverse();
}
