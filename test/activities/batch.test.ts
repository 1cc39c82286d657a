/**
 * Batched activities answer each request on its own (activities/batch.ts): a request's own bad input
 * is its outcome alone, a failure that is not the request's own fails the attempt for a retry.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { settleBatch } from '../../activities/batch';
import { createToolActivities, type CalcBatchResult } from '../../activities/tools';

test('every request at once; a non-retryable failure is that request\'s outcome, the others answered', async () => {
  let running = 0;
  let most = 0;
  const outcomes = await settleBatch([1, 2, 3, 4], async (n) => {
    running++;
    most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, 10));
    running--;
    if (n === 3) throw ApplicationFailure.nonRetryable('three is refused', 'RemoteEngineRequestError');
    return n * 10;
  });
  expect(most).toBe(4);
  expect(outcomes).toEqual([{ ok: 10 }, { ok: 20 }, { failed: { type: 'RemoteEngineRequestError', message: 'three is refused' } }, { ok: 40 }]);
});

test('a failure that is not the request\'s own fails the batch, after every request settled', async () => {
  const settled: number[] = [];
  const down = new Error('engine unavailable');
  await expect(
    settleBatch([1, 2, 3], async (n) => {
      await new Promise((r) => setTimeout(r, n * 5));
      settled.push(n);
      if (n === 1) throw down;
      if (n === 2) throw ApplicationFailure.retryable('sync in progress', 'Busy');
      return n;
    }),
  ).rejects.toBe(down);
  expect(settled).toEqual([1, 2, 3]);
});

test('calcBatch: each expression its value or its CalcInputError, with the attempt that answered', async () => {
  const tools = createToolActivities();
  const env = new MockActivityEnvironment({ attempt: 2 });
  const r: CalcBatchResult = await env.run(tools.calcBatch, { expressions: ['12+30', '7/8', '3*4'] });
  expect(r.attempt).toBe(2);
  expect(r.outcomes[0]).toEqual({ ok: '42' });
  expect(r.outcomes[1]).toMatchObject({ failed: { type: 'CalcInputError' } });
  expect('failed' in r.outcomes[1]! && r.outcomes[1].failed.message).toMatch(/^calc\("7\/8"\): /);
  expect(r.outcomes[2]).toEqual({ ok: '12' });
  // The single-call activity refuses the same input with the same message.
  await expect(env.run(tools.calcWithAttempt, { expression: '7/8' })).rejects.toThrow('failed' in r.outcomes[1]! ? r.outcomes[1].failed.message : '');
});
