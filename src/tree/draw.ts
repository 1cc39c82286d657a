/**
 * Seeded draws over candidate lists. Each consumes the rng a fixed number of times for a given
 * input, so a workflow replaying the same history with the same seed draws the same nodes.
 */
import type { Rng } from '../domain/rng';

/** Index in [0, size): floor(rng() * size), kept below size should an rng ever return 1. */
export function drawIndex(rng: Rng, size: number): number {
  return Math.min(size - 1, Math.floor(rng() * size));
}

/**
 * k items of `items` without replacement, in draw order (a partial Fisher–Yates shuffle: k rng
 * calls). Requires k <= items.length.
 */
export function drawWithoutReplacement<T>(rng: Rng, items: readonly T[], k: number): T[] {
  const pool = items.slice();
  for (let i = 0; i < k; i++) {
    const j = i + drawIndex(rng, pool.length - i);
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, k);
}

/** Index drawn with probability weights[i] / sum(weights); weights must be positive. One rng call. */
export function drawWeighted(rng: Rng, weights: readonly number[]): number {
  const total = weights.reduce((a, w) => a + w, 0);
  const u = rng() * total;
  let cumulative = 0;
  for (let i = 0; i < weights.length; i++) {
    cumulative += weights[i]!;
    if (u < cumulative) return i;
  }
  return weights.length - 1; // u within float rounding of the total
}
