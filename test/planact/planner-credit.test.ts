/** rollout.plannerCredit correct-results: which episodes train the planner. */
import { actorResultsCorrect } from '../../src/planact/planner-credit';
import { evaluateExpression } from '../../src/tasks/arith';

const act = (expression: string, result?: string) => ({ id: '1', expression, ...(result !== undefined ? { result } : {}), toolCalls: 0, toolFailures: 0, generations: 1, transcript: '' });

test('an episode trains the planner only when every act was answered with its true value', () => {
  expect(actorResultsCorrect([{ acts: [act('17+25', '42'), act('8+1', '9')] }, { acts: [act('42+9', '51')] }], evaluateExpression)).toBe(true);
  // The actor got 17+25 wrong: the planner's ANSWER copies it, and the outcome is not the planner's.
  expect(actorResultsCorrect([{ acts: [act('17+25', '41')] }], evaluateExpression)).toBe(false);
  // An act the actor failed (no result).
  expect(actorResultsCorrect([{ acts: [act('17+25')] }], evaluateExpression)).toBe(false);
  // An act the calculator cannot read is the planner's own malformed decision: judged by the outcome.
  expect(actorResultsCorrect([{ acts: [act('17++25', '42')] }], evaluateExpression)).toBe(true);
  // An answer with no acts at all (the planner answered at once): its own decision.
  expect(actorResultsCorrect([{ acts: [] }], evaluateExpression)).toBe(true);
});
