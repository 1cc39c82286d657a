/**
 * The activity side of batched requests (src/contracts/batch.ts): every request of a batch runs at
 * once, and each is answered on its own.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { BatchOutcome } from '../src/contracts/batch';

/**
 * Runs every request at once and waits for all of them. A request that fails non-retryably (bad
 * input for that request alone: a calculator expression, a request the remote server refuses) gets
 * that failure as its outcome and fails no other request. Any other failure (an engine or server
 * that is down, a sync in progress) is not the request's own and would meet the others too: it
 * fails the attempt, and Temporal retries the whole batch.
 */
export async function settleBatch<I, T>(requests: readonly I[], run: (request: I) => Promise<T>): Promise<Array<BatchOutcome<T>>> {
  const settled = await Promise.allSettled(requests.map((r) => run(r)));
  const transient = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected' && !isRequestFailure(s.reason));
  if (transient) throw transient.reason;
  return settled.map((s) =>
    s.status === 'fulfilled' ? { ok: s.value } : { failed: { type: (s.reason as ApplicationFailure).type ?? 'Error', message: (s.reason as ApplicationFailure).message } },
  );
}

function isRequestFailure(err: unknown): err is ApplicationFailure {
  return err instanceof ApplicationFailure && err.nonRetryable === true;
}
