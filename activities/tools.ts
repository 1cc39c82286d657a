/**
 * Tools-queue activities. Bad tool input written by the policy is a non-retryable, typed failure
 * (CalcInputError, with the reason in its details); the episode driver turns it into an error
 * result the actor sees, so model nonsense never fails a workflow.
 */
import { Context } from '@temporalio/activity';
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

    /**
     * calc, plus the attempt that answered: workflows cannot see Temporal's retries of an activity
     * that finally succeeded, and the Plan/Act tool metrics count them.
     */
    async calcWithAttempt({ expression }: CalcInput): Promise<{ value: string; attempt: number }> {
      const attempt = Context.current().info.attempt;
      try {
        return { value: evaluate(expression), attempt };
      } catch (err) {
        if (err instanceof CalcInputError) {
          throw ApplicationFailure.nonRetryable(`calc(${JSON.stringify(expression)}): ${err.message}`, 'CalcInputError', { reason: err.reason, attempt });
        }
        throw err;
      }
    },
  };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
