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
  return fromCounts(by);
}

function fromCounts(by: ReadonlyMap<number, { success: number; total: number }>): HorizonSuccess[] {
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

/**
 * The inverse of horizonMetricKeys over several steps: success per H summed over the metrics
 * lines' counts (e.g. the RL steps of a stretch of a run), rates recomputed from the sums.
 */
export function sumHorizonMetricKeys(steps: ReadonlyArray<Readonly<Record<string, number>>>): HorizonSuccess[] {
  const by = new Map<number, { success: number; total: number }>();
  for (const step of steps) {
    for (const [key, value] of Object.entries(step)) {
      const m = /^plan_h(\d+)_(success|total)_count$/.exec(key);
      if (!m) continue;
      const c = by.get(Number(m[1])) ?? { success: 0, total: 0 };
      c[m[2] as 'success' | 'total'] += value;
      by.set(Number(m[1]), c);
    }
  }
  return fromCounts(by);
}
