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
