/**
 * Phase 3's choice of where to branch. Candidates are the open nodes of one tree (its root, unless
 * options.includeRoot is false, and every segment that ended in a tool call or was cut at
 * tree.segmentTokens), in preorder; pending nodes have no context yet and leaves have nothing to
 * continue, so neither is ever chosen.
 *
 * - 'random' follows the design (seed 003, `sample_expansion_nodes`): n distinct candidates drawn
 *   uniformly when there are at least n, otherwise n uniform draws with replacement.
 * - 'entropy' prefers uncertain branch points: a candidate's weight is its branchEntropy plus
 *   `floor` (> 0, so a node whose continuations were all confident, or that has none generated
 *   yet, keeps a small chance). Draws are proportional to weight and without replacement while
 *   unchosen candidates remain; once every candidate has been chosen, the remaining draws are
 *   with replacement over all of them, still by weight. So n <= candidates gives n distinct
 *   nodes, and n > candidates gives every node once plus the extra draws on uncertain ones.
 *
 * A node chosen k times is to be branched k times. Both modes are deterministic for a given rng
 * state: a fixed number of rng calls (n) over a candidate list in a fixed order.
 */
import type { Rng } from '../domain/rng';
import { drawIndex, drawWeighted, drawWithoutReplacement } from './draw';
import { branchEntropy } from './entropy';
import { TreeError } from './errors';
import { expandable } from './queries';
import type { Forest } from './types';

export type ExpansionMode = 'random' | 'entropy';

export interface ExpansionOptions {
  /** Weight added to every candidate's branchEntropy in 'entropy' mode; > 0. Default 0.05. */
  entropyFloor?: number;
  /**
   * Whether the root is a candidate (default true, as the design: it is a non-leaf node). false
   * leaves root-level diversity to the initial rollouts (ARPO's global samples) and branches only
   * from inside chains; a tree with no open node below its root then falls back to the root, so it
   * still grows instead of filling its outputs with duplicates.
   */
  includeRoot?: boolean;
}

export const DEFAULT_ENTROPY_FLOOR = 0.05;

/** Ids of `n` open nodes of tree `root` to branch from (possibly repeated, see above); [] when n is 0. */
export function selectExpansionNodes(forest: Forest, root: number, n: number, mode: ExpansionMode, rng: Rng, options: ExpansionOptions = {}): string[] {
  if (!Number.isInteger(n) || n < 0) throw new TreeError('bad-argument', null, `n must be an integer >= 0, got ${n}`);
  const open = expandable(forest, root);
  const inner = options.includeRoot === false ? open.filter((id) => forest.nodes[id]!.depth > 0) : open;
  const candidates = inner.length > 0 ? inner : open;
  if (n === 0 || candidates.length === 0) return [];
  if (mode === 'random') {
    if (candidates.length >= n) return drawWithoutReplacement(rng, candidates, n);
    return Array.from({ length: n }, () => candidates[drawIndex(rng, candidates.length)]!);
  }
  if (mode !== 'entropy') throw new TreeError('bad-argument', null, `unknown expansion mode ${JSON.stringify(mode)}`);
  const floor = options.entropyFloor ?? DEFAULT_ENTROPY_FLOOR;
  if (!Number.isFinite(floor) || floor <= 0) throw new TreeError('bad-argument', null, `entropyFloor must be a finite number > 0, got ${floor}`);
  const weights = candidates.map((id) => branchEntropy(forest, id) + floor);
  const pool = candidates.map((_, i) => i);
  const chosen: string[] = [];
  while (chosen.length < n) {
    if (pool.length > 0) {
      const k = drawWeighted(rng, pool.map((i) => weights[i]!));
      chosen.push(candidates[pool[k]!]!);
      pool.splice(k, 1);
    } else {
      chosen.push(candidates[drawWeighted(rng, weights)]!);
    }
  }
  return chosen;
}
