/**
 * The plan reward (RLinf calculate_scores): with usePlanReward, a successful episode earns
 * planRewardCoef * H / baseH on top of the task reward; a failed one earns none, so longer
 * horizons pay only when they succeed.
 */
export interface PlanRewardOptions {
  usePlanReward: boolean;
  planRewardCoef: number;
  baseH: number;
}

export function planReward(success: boolean, horizon: number, opts: PlanRewardOptions): number {
  if (!opts.usePlanReward || !success) return 0;
  return (opts.planRewardCoef * horizon) / opts.baseH;
}

/** Task reward (1 on reaching the goal) plus the plan reward. */
export function episodeReward(success: boolean, horizon: number, opts: PlanRewardOptions): { task: number; plan: number; total: number } {
  const task = success ? 1 : 0;
  const plan = planReward(success, horizon, opts);
  return { task, plan, total: task + plan };
}
