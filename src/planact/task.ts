/** What the Plan/Act driver needs from a task; everything else (turn loop, tools, limits) is generic. */
export interface PlanActTask<P> {
  /** Short name for logs and metrics ("arith"). */
  readonly name: string;
  /** The planner's first context, newline-terminated. */
  plannerPrompt(problem: P): string;
  /** The actor's prompt for one act, newline-terminated. */
  actorPrompt(problem: P, actExpression: string): string;
  /** Episode reward for the planner's final answer (the ANSWER value text). */
  reward(problem: P, answer: string): number;
}
