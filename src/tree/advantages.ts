/**
 * Process credit from the tree, after TreeRL (Hou et al. 2025, "TreeRL: LLM Reinforcement Learning
 * with On-Policy Tree Search", arXiv 2506.11902, its process-supervision rule). With L(s) the
 * scored leaves at or below node s and r(l) a leaf's reward:
 *
 *   V(s)       = mean of r(l) over l in L(s)              (value: how often s leads to success)
 *   global(s)  = V(s) - V(root)                           (better than the prompt's average?)
 *   local(s)   = V(s) - V(parent(s))                      (better than the point it branched from?)
 *   A(s)       = (global(s) + local(s)) / sqrt(|L(s)|)    reweight 'sqrt' (TreeRL's choice)
 *   A(s)       =  global(s) + local(s)                    reweight 'none'
 *
 * The sqrt reweighting answers shared prefixes: a segment with many leaves below it is trained
 * once per output that contains it, so without the division it would dominate the gradient. For
 * a depth-1 segment the parent is the root, so A = 2 (V(s) - V(root)) / sqrt(|L(s)|).
 * Checked against the released code (THUDM/TreeRL, openrlhf/trainer/ppo_utils: tree_node.py
 * `compute_weighted_update` style "sqrt", parallel_mcts.py `path_from_root_to_node` child value
 * minus parent value); that code also has variants we do not copy (a leave-one-out baseline on
 * leaf rewards, token-level normalisation of every step).
 *
 * Our choices where the rule is silent: V uses rewards stored on the leaves (scoreLeaf); an
 * unscored leaf is left out of every V and |L|, and a segment with no scored leaf below it (a
 * pending node, a branch still growing) gets no advantage at all rather than a made-up 0. The
 * released code counts, in the sqrt, only the leaves *selected* as outputs; we count the same
 * leaves as V does, every scored one. Score every leaf to get the paper's rule.
 */
import { TreeError } from './errors';
import { rootNode, treeNodeIds } from './queries';
import type { Forest } from './types';

export interface TreeAdvantageOptions {
  /** 'sqrt': divide by sqrt(number of scored leaves below), as TreeRL; 'none': plain global + local. */
  reweight: 'sqrt' | 'none';
}

export interface NodeValue {
  /** Mean reward of the scored leaves at or below the node. */
  value: number;
  /** How many scored leaves that is. */
  leaves: number;
}

/** V and |L| of every node of tree `root` that has at least one scored leaf at or below it. */
export function nodeValues(forest: Forest, root: number): Record<string, NodeValue> {
  const ids = treeNodeIds(forest, root);
  const sum = new Map<string, number>();
  const count = new Map<string, number>();
  // Reverse preorder visits every child before its parent.
  for (let i = ids.length - 1; i >= 0; i--) {
    const node = forest.nodes[ids[i]!]!;
    let s = node.status === 'leaf' && node.reward !== undefined ? node.reward : 0;
    let c = node.status === 'leaf' && node.reward !== undefined ? 1 : 0;
    for (const child of node.children) {
      s += sum.get(child)!;
      c += count.get(child)!;
    }
    sum.set(node.id, s);
    count.set(node.id, c);
  }
  const out: Record<string, NodeValue> = {};
  for (const id of ids) {
    const leaves = count.get(id)!;
    if (leaves > 0) out[id] = { value: sum.get(id)! / leaves, leaves };
  }
  return out;
}

/** A(s) for every segment of tree `root` with a scored leaf below it, by id (roots excluded). */
export function treeAdvantages(forest: Forest, root: number, options: TreeAdvantageOptions): Record<string, number> {
  if (options.reweight !== 'sqrt' && options.reweight !== 'none') {
    throw new TreeError('bad-argument', null, `reweight must be 'sqrt' or 'none', got ${JSON.stringify(options.reweight)}`);
  }
  const values = nodeValues(forest, root);
  const rootId = rootNode(forest, root).id;
  const rootValue = values[rootId];
  if (rootValue === undefined) throw new TreeError('no-scored-leaves', rootId, 'no leaf of this tree has a reward');
  const out: Record<string, number> = {};
  for (const [id, v] of Object.entries(values)) {
    if (id === rootId) continue;
    const parent = values[forest.nodes[id]!.parent!]!;
    const advantage = v.value - rootValue.value + (v.value - parent.value);
    out[id] = options.reweight === 'sqrt' ? advantage / Math.sqrt(v.leaves) : advantage;
  }
  return out;
}
