/**
 * The call table behind coalesced local calls (src/engine/call-table.ts): a claim returns at the
 * first settled call plus its window, takes each call once, reports keys it does not hold, retries
 * each call on its own, and starting a key twice runs it once.
 */
import { CallTable, runWithRetries, type CallRetry } from '../../src/engine/call-table';

const noRetry: CallRetry = { maximumAttempts: 1, initialIntervalMs: 1, backoffCoefficient: 2, maximumIntervalMs: 1, attemptTimeoutMs: 10_000, isNonRetryable: () => false };
const after = <T>(ms: number, value: T): Promise<T> => new Promise((r) => setTimeout(() => r(value), ms));

describe('CallTable', () => {
  it('returns the first reply with those settling within the window, and leaves the later ones for the next claim', async () => {
    const table = new CallTable<string>();
    table.start('a', () => after(20, 'A'), noRetry);
    table.start('b', () => after(40, 'B'), noRetry);
    table.start('c', () => after(400, 'C'), noRetry);
    const t0 = Date.now();
    const first = await table.claim(['a', 'b', 'c'], { windowMs: 100, maxWaitMs: 5000 });
    expect(first.settled.map((s) => [s.key, 'ok' in s ? s.ok : undefined])).toEqual([
      ['a', 'A'],
      ['b', 'B'],
    ]);
    // The window runs from the first reply (20 ms), not the slowest call (400 ms).
    expect(Date.now() - t0).toBeLessThan(300);
    expect(table.size).toBe(1);
    const second = await table.claim(['c'], { windowMs: 100, maxWaitMs: 5000 });
    expect(second.settled.map((s) => s.key)).toEqual(['c']);
    expect(table.size).toBe(0);
  });

  it('returns at once, without waiting out the window, when every claimed call has settled', async () => {
    const table = new CallTable<number>();
    table.start('x', () => after(10, 1), noRetry);
    table.start('y', () => after(15, 2), noRetry);
    const t0 = Date.now();
    const { settled } = await table.claim(['x', 'y'], { windowMs: 5000, maxWaitMs: 5000 });
    expect(settled).toHaveLength(2);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('reports the keys it does not hold (a worker that restarted), at once', async () => {
    const table = new CallTable<number>();
    table.start('held', () => after(1000, 1), noRetry);
    const t0 = Date.now();
    const { settled, unknown } = await table.claim(['held', 'lost'], { windowMs: 100, maxWaitMs: 5000 });
    expect(unknown).toEqual(['lost']);
    expect(settled).toEqual([]);
    expect(Date.now() - t0).toBeLessThan(500);
    expect(table.has('held')).toBe(true);
  });

  it('comes back empty after maxWait, and when its signal aborts; the calls go on', async () => {
    const table = new CallTable<number>();
    table.start('slow', () => after(300, 7), noRetry);
    expect((await table.claim(['slow'], { windowMs: 10, maxWaitMs: 30 })).settled).toEqual([]);
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 20);
    expect((await table.claim(['slow'], { windowMs: 10, maxWaitMs: 5000, signal: abort.signal })).settled).toEqual([]);
    // Aborted after its call settled: it leaves the reply for the next claim.
    const late = new AbortController();
    late.abort();
    await after(300, null);
    expect((await table.claim(['slow'], { windowMs: 10, maxWaitMs: 5000, signal: late.signal })).settled).toEqual([]);
    const { settled } = await table.claim(['slow'], { windowMs: 10, maxWaitMs: 5000 });
    expect(settled).toEqual([{ key: 'slow', ok: 7, attempt: 1 }]);
  });

  it('runs a key once however often it is started (a retried exchange resubmits its calls)', async () => {
    const table = new CallTable<number>();
    let runs = 0;
    for (let i = 0; i < 3; i++) table.start('k', async () => ++runs, noRetry);
    await table.claim(['k'], { windowMs: 0, maxWaitMs: 1000 });
    expect(runs).toBe(1);
  });

  it('drops settled calls nobody claims after its ttl', async () => {
    let now = 0;
    const table = new CallTable<number>(1000, () => now);
    table.start('orphan', async () => 1, noRetry);
    await after(5, null);
    now = 2000;
    table.start('next', async () => 2, noRetry);
    expect(table.has('orphan')).toBe(false);
    expect(table.has('next')).toBe(true);
  });
});

describe('runWithRetries', () => {
  const policy = (over: Partial<CallRetry>): CallRetry => ({ ...noRetry, maximumAttempts: 4, initialIntervalMs: 5, maximumIntervalMs: 10, ...over });

  it('retries a failing call, and says which attempt answered', async () => {
    let n = 0;
    const settled = await runWithRetries(async (attempt) => {
      n++;
      if (attempt < 3) throw new Error('engine busy');
      return 'done';
    }, policy({}));
    expect(settled).toEqual({ ok: 'done', attempt: 3 });
    expect(n).toBe(3);
  });

  it('stops at a non-retryable failure, and after the last attempt', async () => {
    const bad = new Error('bad input');
    expect(await runWithRetries(async () => Promise.reject(bad), policy({ isNonRetryable: (e) => e === bad }))).toEqual({ error: bad, attempt: 1 });
    const down = await runWithRetries(async () => Promise.reject(new Error('down')), policy({}));
    expect(down).toMatchObject({ attempt: 4, error: { message: 'down' } });
  });

  it('counts an attempt past its timeout as failed, and tries again', async () => {
    const settled = await runWithRetries((attempt) => (attempt === 1 ? after(1000, 'late') : Promise.resolve('prompt')), policy({ attemptTimeoutMs: 20 }));
    expect(settled).toEqual({ ok: 'prompt', attempt: 2 });
  });
});
