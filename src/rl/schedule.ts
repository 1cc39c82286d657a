/**
 * The bookkeeping of asynchronous RL (rl.async; workflows/training-run/rl-schedules.ts runs the schedule): which
 * steps' rollouts run while a step trains, and how busy the trainer and the inference workers were.
 * Pure, so the workflow can use it.
 */

/** A rollout's wall-time interval (workflow time, ms); `ended` absent while it runs. */
export interface RolloutInterval {
  started: number;
  ended?: number;
}

/**
 * The steps whose rollouts should be running while step `step` is next to train: it and the next
 * maxStaleness steps (none past the last). Each starts on the newest weights when it is launched, so a
 * step trains on samples at most maxStaleness versions old.
 */
export function stepsToLaunch(step: number, lastStep: number, maxStaleness: number): number[] {
  const out: number[] = [];
  for (let s = step; s <= Math.min(lastStep, step + maxStaleness); s++) out.push(s);
  return out;
}

/** Share of [from, to] covered by none of the intervals (a running one counts up to `to`). */
export function idleShare(intervals: readonly RolloutInterval[], from: number, to: number): number {
  if (!(to > from)) return 0;
  const parts = intervals
    .map((i) => [Math.max(from, i.started), Math.min(to, i.ended ?? to)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let covered = 0;
  let end = from;
  for (const [a, b] of parts) {
    if (b <= end) continue;
    covered += b - Math.max(a, end);
    end = b;
  }
  return 1 - covered / (to - from);
}
