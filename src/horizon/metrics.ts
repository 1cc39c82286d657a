/**
 * Success rate per plan horizon (RLinf plan_h{H}_success_count / total_count / success_rate). These
 * are metric-only values: they go to the step's metrics line and the workflow result, never into a
 * training batch (a batch is built from Sample fields only; test/horizon/metric-keys.test.ts).
 */
export interface HorizonSuccess {
  horizon: number;
  success: number;
  total: number;
  rate: number;
  /** Binomial standard error of the rate, sqrt(p(1-p)/n). */
  stderr: number;
}

export function successByHorizon(episodes: ReadonlyArray<{ horizon: number; success: boolean }>): HorizonSuccess[] {
  const by = new Map<number, { success: number; total: number }>();
  for (const e of episodes) {
    const c = by.get(e.horizon) ?? { success: 0, total: 0 };
    c.total++;
    if (e.success) c.success++;
    by.set(e.horizon, c);
  }
  return [...by.entries()]
    .sort(([a], [b]) => a - b)
    .map(([horizon, { success, total }]) => {
      const rate = total === 0 ? 0 : success / total;
      return { horizon, success, total, rate, stderr: total === 0 ? 0 : Math.sqrt((rate * (1 - rate)) / total) };
    });
}

/** Keys of the per-H metrics as the metrics file names them, e.g. plan_h5_success_rate. */
export function horizonMetricKeys(rows: readonly HorizonSuccess[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) {
    out[`plan_h${r.horizon}_success_count`] = r.success;
    out[`plan_h${r.horizon}_total_count`] = r.total;
    out[`plan_h${r.horizon}_success_rate`] = r.rate;
  }
  return out;
}
