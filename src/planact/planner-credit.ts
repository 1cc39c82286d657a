/**
 * Planner credit in Plan/Act episodes (rollout.plannerCredit). The episode's reward judges both roles,
 * but when an actor answers an act wrongly (or fails it), the planner copies the wrong RESULT into its
 * ANSWER and the episode fails whatever the plan was: its outcome says nothing about the planner's
 * decisions. With 'correct-results' such an episode trains the actor and not the planner; the planner
 * learns only from episodes whose RESULT lines were all right, where the outcome is its own doing
 * (a plan that pairs the wrong operands, miscopies a value or answers early still earns 0).
 */
import type { TurnRecord } from './episode-types';

/** Whether every act of the episode was answered, and answered with its expression's true value. */
export function actorResultsCorrect(turns: readonly Pick<TurnRecord, 'acts'>[], evaluate: (expression: string) => number): boolean {
  for (const turn of turns) {
    for (const act of turn.acts) {
      // An act the actor failed (no result) is the actor's doing too.
      if (act.result === undefined) return false;
      let truth: number;
      try {
        truth = evaluate(act.expression);
      } catch {
        // An act the calculator cannot read is a malformed plan: the planner's own decision.
        continue;
      }
      // Only a plain integer can be right ('' or '4 2' would read as numbers in Number()).
      const answer = act.result.trim();
      if (!/^-?\d+$/.test(answer) || Number(answer) !== truth) return false;
    }
  }
  return true;
}
