/**
 * Tools-queue activities. Bad tool input written by the policy is a non-retryable, typed failure
 * (CalcInputError, with the reason in its details); the episode driver turns it into an error
 * result the actor sees, so model nonsense never fails a workflow.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { calc as evaluate, CalcInputError } from '../src/tasks/arith/calc';
import type { BatchOutcome } from '../src/contracts/batch';
import { settleBatch } from './batch';

export interface CalcInput {
  expression: string;
}

/** calcBatch's answer: each expression's value or its CalcInputError, and the attempt that answered. */
export interface CalcBatchResult {
  outcomes: Array<BatchOutcome<string>>;
  attempt: number;
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

    /**
     * The calculator calls an episode workflow made in one activation (workflows/request-batcher.ts):
     * each expression answered on its own, its bad input (CalcInputError) its outcome alone.
     */
    async calcBatch({ expressions }: { expressions: string[] }): Promise<CalcBatchResult> {
      const attempt = Context.current().info.attempt;
      return { outcomes: await settleBatch(expressions, async (expression) => evaluateOrFail(expression, { attempt })), attempt };
    },
  };
}

export type ToolActivities = ReturnType<typeof createToolActivities>;
