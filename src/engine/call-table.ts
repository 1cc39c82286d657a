/**
 * Calls in flight, keyed, each retried on its own, and claimed in groups: what an orchestration
 * worker holds for its episode workflows' coalesced local calls (activities/call-exchange.ts).
 *
 * Why: a local activity per call wakes the episode workflow once per reply, and at 1,024 concurrent
 * episodes those activations are most of the orchestration worker's CPU (docs/benchmarks.md). Here a
 * call outlives the local activity that submitted it; a claim returns as soon as one of its calls
 * settles, after a short window that lets the replies finishing together come back together. So
 * each reply reaches its episode within the window, not with the slowest call of a batch, and one
 * activation serves several replies.
 *
 * Starting is idempotent (a retried claim resubmits the same keys), and a claim takes each settled
 * call once: claimed calls leave the table. Settled calls nobody claims (their workflow was
 * cancelled, or moved to another worker) are dropped after `ttlMs`.
 */

/** How a call is retried here, as an activity's retry policy would retry it. */
export interface CallRetry {
  maximumAttempts: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  /** Each attempt's limit; a late attempt counts as a failed one (it keeps running, unheard). */
  attemptTimeoutMs: number;
  /** True for a failure that no retry can mend (bad input, a refusal): it settles the call at once. */
  isNonRetryable(err: unknown): boolean;
}

export type CallSettlement<T> = { ok: T; attempt: number } | { error: unknown; attempt: number };

interface Entry<T> {
  settled?: CallSettlement<T>;
  settledAt?: number;
  /** The claims waiting on this call, told when it settles. */
  claims: Set<() => void>;
}

export interface ClaimOptions {
  /** After the first of the claimed calls settles, how long to wait for more (less if all settle). */
  windowMs: number;
  /** Return empty-handed after this long with nothing settled (the caller claims again). */
  maxWaitMs: number;
  /** Abandons the claim, which then takes nothing (the calls go on; a later claim takes them). */
  signal?: AbortSignal;
}

export class CallTimeoutError extends Error {
  override name = 'CallTimeoutError';
}

export class CallTable<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private lastSweep = 0;

  constructor(
    private readonly ttlMs = 10 * 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Calls in the table (running, or settled and not yet claimed). */
  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Starts `run` under `key` unless the key is already in the table. */
  start(key: string, run: (attempt: number) => Promise<T>, retry: CallRetry): void {
    this.sweep();
    if (this.entries.has(key)) return;
    const entry: Entry<T> = { claims: new Set() };
    this.entries.set(key, entry);
    void runWithRetries(run, retry).then((settled) => {
      entry.settled = settled;
      entry.settledAt = this.now();
      for (const told of [...entry.claims]) told();
    });
  }

  /**
   * The settled calls among `keys`, taken out of the table: waits for the first to settle (up to
   * maxWaitMs), then up to windowMs for the others. Keys not in the table are the caller's to
   * resubmit (`unknown`); with any, it returns at once.
   */
  async claim(keys: readonly string[], opts: ClaimOptions): Promise<{ settled: Array<{ key: string } & CallSettlement<T>>; unknown: string[] }> {
    const unknown: string[] = [];
    const known: Array<[string, Entry<T>]> = [];
    for (const key of keys) {
      const e = this.entries.get(key);
      if (e) known.push([key, e]);
      else unknown.push(key);
    }
    if (unknown.length === 0 && known.length > 0) await this.waitForReplies(known.map(([, e]) => e), opts);
    // An abandoned claim (its exchange cancelled) takes nothing: what it took would be lost with it.
    if (opts.signal?.aborted) return { settled: [], unknown };
    const settled: Array<{ key: string } & CallSettlement<T>> = [];
    for (const [key, e] of known) {
      // Taken by another claim on the same key meanwhile (a retried exchange): not this one's.
      if (!e.settled || this.entries.get(key) !== e) continue;
      this.entries.delete(key);
      settled.push({ key, ...e.settled });
    }
    return { settled, unknown };
  }

  /** Until the first of `entries` settles (at most maxWaitMs), then until all have or windowMs passes; or the signal aborts. */
  private waitForReplies(entries: Array<Entry<T>>, opts: ClaimOptions): Promise<void> {
    let unsettled = entries.filter((e) => !e.settled).length;
    if (unsettled < entries.length && (unsettled === 0 || opts.windowMs <= 0)) return Promise.resolve();
    if (opts.signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let timer = setTimeout(finish, unsettled < entries.length ? opts.windowMs : opts.maxWaitMs);
      let windowOpen = unsettled < entries.length;
      function told(): void {
        unsettled--;
        if (unsettled === 0) finish();
        else if (!windowOpen) {
          // The first reply: wait the window for the others.
          windowOpen = true;
          clearTimeout(timer);
          timer = setTimeout(finish, opts.windowMs);
        }
      }
      function finish(): void {
        clearTimeout(timer);
        for (const e of entries) e.claims.delete(told);
        opts.signal?.removeEventListener('abort', finish);
        resolve();
      }
      for (const e of entries) if (!e.settled) e.claims.add(told);
      opts.signal?.addEventListener('abort', finish, { once: true });
    });
  }

  /** Drops settled calls unclaimed for ttlMs, at most once a ttl/10. */
  private sweep(): void {
    const now = this.now();
    if (now - this.lastSweep < this.ttlMs / 10) return;
    this.lastSweep = now;
    for (const [key, e] of this.entries) if (e.settledAt !== undefined && now - e.settledAt > this.ttlMs) this.entries.delete(key);
  }
}

/** `run` until it succeeds, fails non-retryably, or runs out of attempts, backing off between them. */
export async function runWithRetries<T>(run: (attempt: number) => Promise<T>, retry: CallRetry): Promise<CallSettlement<T>> {
  let interval = retry.initialIntervalMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: await withTimeout(run(attempt), retry.attemptTimeoutMs), attempt };
    } catch (error) {
      if (retry.isNonRetryable(error) || attempt >= retry.maximumAttempts) return { error, attempt };
    }
    await new Promise((r) => setTimeout(r, interval));
    interval = Math.min(interval * retry.backoffCoefficient, retry.maximumIntervalMs);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new CallTimeoutError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
