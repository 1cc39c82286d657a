/**
 * Plan horizons per episode (docs/grid-horizons.md; RLinf's `pattern.repeat(reps)[:bsz]`): episode i of
 * a batch plans H = pattern[i mod pattern length] moves at a time. Every batch starts the cycle
 * afresh, so episode i of any batch has the same H. With a batch ordered prompt by prompt, a group
 * of several episodes of one layout spans several horizons.
 */
export function assignHorizons(pattern: readonly number[], batchSize: number): number[] {
  if (pattern.length === 0) throw new RangeError('actionHorizonsPattern is empty');
  if (pattern.some((h) => !Number.isInteger(h) || h < 1)) throw new RangeError(`horizons must be integers >= 1, got ${JSON.stringify(pattern)}`);
  return Array.from({ length: batchSize }, (_, i) => pattern[i % pattern.length]!);
}
