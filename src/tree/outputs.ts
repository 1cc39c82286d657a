/**
 * Phase 4: the n outputs of one tree. A root with at least n leaves gives n distinct leaves drawn
 * uniformly. A root with fewer gives every leaf once and then repeats: the leaves are put in a
 * seeded random order and cycled, so each appears floor(n/L) or ceil(n/L) times and which ones
 * get the extra copy is random, not always the first in the tree. Repeats are marked, so the
 * caller can report them (a GRPO group with copies is less informative than it looks).
 */
import type { Rng } from '../domain/rng';
import { drawWithoutReplacement } from './draw';
import { TreeError } from './errors';
import { leaves, rootNode } from './queries';
import type { Forest } from './types';

export interface TreeOutput {
  /** A leaf of the tree. */
  id: string;
  /** True for a copy of a leaf already output (the tree had fewer leaves than n). */
  duplicate: boolean;
}

/** Exactly `n` outputs of tree `root`; a typed error when the tree has no leaf at all (and n > 0). */
export function sampleOutputs(forest: Forest, root: number, n: number, rng: Rng): TreeOutput[] {
  if (!Number.isInteger(n) || n < 0) throw new TreeError('bad-argument', null, `n must be an integer >= 0, got ${n}`);
  const all = leaves(forest, root);
  if (n === 0) return [];
  if (all.length === 0) throw new TreeError('no-leaves', rootNode(forest, root).id, `tree has no leaf to sample ${n} outputs from`);
  if (all.length >= n) return drawWithoutReplacement(rng, all, n).map((id) => ({ id, duplicate: false }));
  const order = drawWithoutReplacement(rng, all, all.length);
  return Array.from({ length: n }, (_, k) => ({ id: order[k % order.length]!, duplicate: k >= order.length }));
}
