import type { PlanActTask } from '../../planact/task';
import { arithActorPrompt, arithPlannerPrompt } from './formats';
import type { ArithProblem } from './problem';
import { arithReward } from './reward';

/** The arithmetic task bound to the Plan/Act driver: runPlanActEpisode(problem, deps, { task: arithTask }). */
export const arithTask: PlanActTask<ArithProblem> = {
  name: 'arith',
  plannerPrompt: (problem) => arithPlannerPrompt(problem.expression),
  actorPrompt: (_problem, expression) => arithActorPrompt(expression),
  reward: (problem, answer) => arithReward(problem, answer),
};
