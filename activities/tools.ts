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

/** The calculator's answer, or its bad-input error as a typed, non-retryable failure. */
function evaluateOrFail(expression: string, details: Record<string, unknown> = {}): string {
  try {
    return evaluate(expression);
  } catch (err) {
    if (err instanceof CalcInputError) {
      throw ApplicationFailure.nonRetryable(`calc(${JSON.stringify(expression)}): ${err.message}`, 'CalcInputError', { reason: err.reason, ...details });
    }
    throw err;
  }
}

export function createToolActivities() {
  return {
    async calc({ expression }: CalcInput): Promise<string> {
      return evaluateOrFail(expression);
    },

    /**
     * calc, plus the attempt that answered: workflows cannot see Temporal's retries of an activity
     * that finally succeeded, and the Plan/Act tool metrics count them.
     */
    async calcWithAttempt({ expression }: CalcInput): Promise<{ value: string; attempt: number }> {
      const attempt = Context.current().info.attempt;
      return { value: evaluateOrFail(expression, { attempt }), attempt };
    },
  };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
