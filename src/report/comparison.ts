/**
 * The compared policies of a run's result (SFT only, the compare.* baselines, RL) in the order a
 * person reads them, and paired differences on the same test problems.
 */
import type { ComparedPolicy, ComparedResult, Comparison } from '../contracts/training-run';

export const COMPARED_POLICIES: ReadonlyArray<{ key: ComparedPolicy; label: string }> = [
  { key: 'sftOnly', label: 'SFT only' },
  { key: 'moreSft', label: 'SFT + more SFT' },
  { key: 'filteredSft', label: 'SFT + filtered SFT' },
  { key: 'rft', label: 'SFT + RFT' },
  { key: 'rl', label: 'SFT + RL' },
];

/** The policies a comparison has, in reading order. */
export function comparedResults(c: Comparison): Array<{ key: ComparedPolicy; label: string; result: ComparedResult }> {
  return COMPARED_POLICIES.flatMap(({ key, label }) => {
    const result = c[key];
    return result ? [{ key, label, result }] : [];
  });
}

export interface PairedDifference {
  /** Mean of a - b over the problems (a fraction; x100 for points). */
  diff: number;
  /** Standard error of that mean: the sample sd of the per-problem differences over sqrt(n). */
  stderr: number;
  n: number;
}

/**
 * a - b on the same problems from their per-problem greedy correctness ('1'/'0' strings of one
 * length): pairing removes the problems' own difficulty from the error.
 */
export function pairedOnProblems(a: string, b: string): PairedDifference {
  if (a.length !== b.length || a.length === 0) throw new RangeError(`per-problem results of different lengths (${a.length}, ${b.length})`);
  const d = [...a].map((x, i) => Number(x) - Number(b[i]));
  const n = d.length;
  const mean = d.reduce((s, x) => s + x, 0) / n;
  const variance = n > 1 ? d.reduce((s, x) => s + (x - mean) ** 2, 0) / (n - 1) : 0;
  return { diff: mean, stderr: Math.sqrt(variance / n), n };
}
