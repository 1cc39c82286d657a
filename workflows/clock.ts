/** Time in workflow code: the replay-safe clock and deadlines on work a workflow waits for. */
import { CancellationScope, isCancellation } from '@temporalio/workflow';

/**
 * Workflow time in ms. Inside a workflow, Date is pinned to the start of the current workflow task
 * and replays identically, so durations measured with it are deterministic.
 */
export function workflowNow(): number {
  return new Date().getTime();
}

/**
 * Runs fn in a scope cancelled after `ms`. Tells a timeout apart from a cancellation of the caller
 * (the caller's scope is then cancelled too, and the cancellation is rethrown).
 */
export async function withDeadline<T>(ms: number, fn: () => Promise<T>): Promise<{ timedOut: false; value: T } | { timedOut: true }> {
  try {
    return { timedOut: false, value: await CancellationScope.withTimeout(ms, fn) };
  } catch (err) {
    if (isCancellation(err) && !CancellationScope.current().consideredCancelled) return { timedOut: true };
    throw err;
  }
}
