/**
 * Requests that a workflow's coroutines make in one activation, sent as one batched activity
 * (generateBatch, calcBatch; src/contracts/batch.ts).
 *
 * Why: an episode workflow plays a GRPO group, whose episodes advance together. The engine answers a
 * batch of requests at once, so their replies reach the workflow in one activation and the episodes'
 * next requests are made in the same burst of microtasks. Sent as an activity each, every request
 * costs the server and both workers a round trip (12–20 ms of CPU on a 2-core machine,
 * docs/benchmarks.md), which on the main job was more CPU than the policy's own forward passes;
 * sent together, a burst costs one.
 *
 * When: the first request of a burst arms a condition that holds once it is evaluated. Temporal
 * evaluates blocked conditions after the activation's jobs and the microtasks they set off have run
 * (and again after each job: a request made synchronously inside a signal or update handler is sent
 * at once), so every request the burst makes is in the batch. Replay delivers the same activations,
 * so the same batches form and the history replays.
 *
 * Each request settles on its own: with its value, with its own non-retryable failure (an
 * ApplicationFailure of the type the activity met, which fails a workflow that lets it through, as the
 * activity's failure would have), or, when the batch activity itself fails after its retries, with
 * that failure, which every request of the batch shares.
 */
import { ApplicationFailure, condition } from '@temporalio/workflow';
import type { BatchOutcome } from '../src/contracts/batch';

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

/**
 * Settles at the next evaluation of blocked conditions, after the activation's jobs and the
 * microtasks they set off: when every request of the burst is made. Rejects if the scope is
 * cancelled first.
 */
export function endOfBurst(): Promise<void> {
  let armed = false;
  // Blocked now (the eager check sees armed false); true at the next evaluation of conditions.
  const over = condition(() => armed);
  armed = true;
  return over;
}

/**
 * A function that takes one request and sends it with the others of its activation through `send`,
 * at most `maxBatch` to an activity (a larger burst is sent as several activities at once, which keeps
 * each activity's input, and so each history event, bounded).
 */
export function batchPerActivation<I, O>(send: (items: I[]) => Promise<Array<BatchOutcome<O>>>, maxBatch = 32): (item: I) => Promise<O> {
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch must be a positive integer, got ${maxBatch}`);
  let pending: Array<Waiting<I, O>> = [];

  const sendOne = async (batch: Array<Waiting<I, O>>): Promise<void> => {
    let outcomes: Array<BatchOutcome<O>>;
    try {
      outcomes = await send(batch.map((w) => w.item));
    } catch (err) {
      for (const w of batch) w.reject(err);
      return;
    }
    batch.forEach((w, i) => {
      const o = outcomes[i];
      if (o === undefined) w.reject(ApplicationFailure.nonRetryable(`a batch of ${batch.length} requests was answered with ${outcomes.length} outcomes`, 'BatchAnswerError'));
      else if ('ok' in o) w.resolve(o.ok);
      else w.reject(ApplicationFailure.nonRetryable(o.failed.message, o.failed.type));
    });
  };

  const flushAfterBurst = async (): Promise<void> => {
    try {
      await endOfBurst();
    } catch (err) {
      // The scope was cancelled before the burst was sent: every request of it is cancelled.
      const cancelled = pending;
      pending = [];
      for (const w of cancelled) w.reject(err);
      return;
    }
    const burst = pending;
    pending = [];
    const sends: Array<Promise<void>> = [];
    for (let i = 0; i < burst.length; i += maxBatch) sends.push(sendOne(burst.slice(i, i + maxBatch)));
    await Promise.all(sends);
  };

  return (item: I) =>
    new Promise<O>((resolve, reject) => {
      pending.push({ item, resolve, reject });
      // sendOne and flushAfterBurst settle every request themselves and never reject.
      if (pending.length === 1) void flushAfterBurst();
    });
}
