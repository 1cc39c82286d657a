/** The numbers the result summaries print (summarize-runs, summarize-paired-runs, dual-compare). */

/** A fraction as a percentage, e.g. "84.0%". */
export const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;

/** A difference of fractions in signed points, e.g. "+1.8". */
export const pts = (x: number): string => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;

/** Mean and sample (n - 1) standard deviation; sd 0 for one value. */
export function meanSd(xs: readonly number[]): { mean: number; sd: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd };
}

/**
 * Per-run differences (fractions) summarised in points: their mean and its standard error over the
 * runs (sd / sqrt(n)), which is the one about the methods. With one run there is no spread to
 * estimate it from: "n/a", not 0.
 */
export function pairedSe(diffs: readonly number[]): { mean: string; se: string } {
  const { mean, sd } = meanSd(diffs);
  return { mean: pts(mean), se: diffs.length > 1 ? ((100 * sd) / Math.sqrt(diffs.length)).toFixed(1) : 'n/a' };
}
