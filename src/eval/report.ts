import type { HorizonSuccess } from '../horizon/metrics';
/** Result of evaluating the policy on held-out problems (kept small: it is in the history). */
export interface EvalReport {
  problems: number;
  /** Planner turns that produced exactly the oracle plan, given the oracle context so far. */
  plannerAccuracy?: number;
  /** Actor sub-tasks answered correctly (with calculator calls). */
  actorAccuracy?: number;
  /** Whole episodes (policy as planner and actor) with the correct final answer. */
  episodeAccuracy: number;
  /** Grid world: greedy success per plan horizon (planner and actor accuracies are the arithmetic task's). */
  byHorizon?: HorizonSuccess[];
  /** A few rendered episodes for people reading the Web UI. */
  examples: string[];
}
