/**
 * Trailing rolling mean for noisy per-step series (mean rollout reward jumps with every batch).
 * Trailing, not centred, so the last point of a live run is a mean of what already happened.
 */

/** Mean of the last `window` values up to and including each index (fewer at the start). NaN values are skipped. */
export function trailingMean(values: readonly number[], window: number): number[] {
  if (!Number.isInteger(window) || window < 1) throw new Error(`rolling window must be a positive integer, got ${window}`);
  return values.map((_, i) => {
    let sum = 0;
    let count = 0;
    for (let j = Math.max(0, i - window + 1); j <= i; j++) {
      const v = values[j]!;
      if (Number.isFinite(v)) {
        sum += v;
        count++;
      }
    }
    return count > 0 ? sum / count : Number.NaN;
  });
}

/** A window of about a tenth of the run, between 2 and 25 steps: smooth enough to read, short enough to follow a trend. */
export function defaultRollingWindow(points: number): number {
  return Math.min(25, Math.max(2, Math.round(points / 10)));
}
