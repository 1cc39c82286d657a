import type { ArithProblem } from './problem';

/** 1 when the planner's ANSWER is the problem's value as a plain integer ("81", "-7"), else 0. */
export function arithReward(problem: Pick<ArithProblem, 'answer'>, answer: string | null): number {
  if (answer === null || !/^-?\d{1,15}$/.test(answer.trim())) return 0;
  return Number(answer.trim()) === problem.answer ? 1 : 0;
}
