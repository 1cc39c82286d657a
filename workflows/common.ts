/** Helpers any workflow uses: the replay-safe clock, deadlines, rounded means, text previews. */
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

/** The mean, rounded to 4 decimals for the Web UI (0 for no values). */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1e4) / 1e4;
}

/** Long model text cut for the Web UI; the full text stays in the token blobs. */
export function preview(text: string, max = 240): string {
  return text.length > max ? `${text.slice(0, max)}... (${text.length} chars)` : text;
}
