/**
 * Tools-queue activities. Bad tool input written by the policy is a non-retryable, typed failure
 * (CalcInputError, with the reason in its details); the episode driver turns it into an error
 * result the actor sees, so model nonsense never fails a workflow.
 */
import { ApplicationFailure } from '@temporalio/common';
import { calc as evaluate, CalcInputError } from '../src/tasks/arith/calc';

export interface CalcInput {
  expression: string;
}

export function createToolActivities() {
  return {
    async calc({ expression }: CalcInput): Promise<string> {
      try {
        return evaluate(expression);
      } catch (err) {
        if (err instanceof CalcInputError) {
          throw ApplicationFailure.nonRetryable(`calc(${JSON.stringify(expression)}): ${err.message}`, 'CalcInputError', { reason: err.reason });
        }
        throw err;
      }
    },
  };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
