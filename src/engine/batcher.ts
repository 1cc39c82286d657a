/**
 * Continuous-batching front for a PolicyEngine: requests that arrive while the device is busy are
 * grouped by sampling parameters and run together as the next batch. One batch is in flight at a
 * time, which is what "one slot per device" means for an engine that batches internally.
 *
 * Fair between callers: prompts carry a group (one client request), and a batch takes the groups'
 * prompts in turn (the first of each group, then the second of each, ...), so a request of thousands
 * of prompts shares every batch with the small requests that arrive behind it instead of going first.
 * A prompt whose signal aborts leaves the queue at once, or its row stops at the engine's next step.
 */
import type { Completion, SamplingParams } from '../domain/types';
import { GenerationAbortedError, type RowControl } from './row-control';
import type { PolicyEngine, Prompt } from './types';

/** Per-prompt options of BatchingEngine.complete. */
export interface CompleteOptions extends Omit<RowControl, 'seed'> {
  /** Prompts of one group are interleaved with other groups' (default: a group of its own). */
  group?: string;
}

interface Pending {
  prompt: Prompt;
  params: SamplingParams;
  group: string;
  control: RowControl;
  /** Its onToken was called: run again, it would stream its tokens a second time. */
  streamed: boolean;
  resolve(c: Completion): void;
  reject(err: unknown): void;
}

let anonymousGroups = 0;

export class BatchingEngine {
  private queue: Pending[] = [];
  /** Prompts batched so far per group that still has prompts waiting (fair queueing). */
  private readonly served = new Map<string, number>();
  private running = false;
  /** Batches run so far and their sizes, for metrics. */
  readonly batchSizes: number[] = [];

  constructor(
    private readonly engine: PolicyEngine,
    private readonly maxBatch: number,
  ) {
    if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch must be a positive integer, got ${maxBatch}`);
  }

  /** Frees the engine once the queue is empty (an engine without release() needs nothing). */
  async release(): Promise<void> {
    while (this.running || this.queue.length > 0) await new Promise((r) => setTimeout(r, 50));
    await this.engine.release?.();
  }

  /** Prompts waiting for a batch. */
  get queued(): number {
    return this.queue.length;
  }

  get weightVersion(): number {
    return this.engine.weightVersion;
  }

  /** The engine's teacher-forced scoring, outside the generation batches. */
  scoreTokens(promptIds: number[], tokenIds: number[], temperature = 1): Promise<number[]> {
    if (!this.engine.scoreTokens) return Promise.reject(new Error('this engine cannot score tokens'));
    return this.engine.scoreTokens(promptIds, tokenIds, temperature);
  }

  complete(prompt: Prompt, params: SamplingParams, options: CompleteOptions = {}): Promise<Completion> {
    const { group, ...control } = options;
    return new Promise<Completion>((resolve, reject) => {
      const signal = control.signal;
      if (signal?.aborted) return reject(new GenerationAbortedError());
      // Still queued when aborted: leave the queue now rather than wait for a batch to skip it.
      const onAbort = (): void => {
        const at = this.queue.indexOf(pending);
        if (at < 0) return;
        this.queue.splice(at, 1);
        reject(new GenerationAbortedError());
      };
      const settle = <T>(f: (v: T) => void) => (v: T): void => {
        signal?.removeEventListener('abort', onAbort);
        f(v);
      };
      const onToken = control.onToken;
      const pending: Pending = {
        prompt,
        params,
        group: group ?? `#${anonymousGroups++}`,
        control: {
          ...control,
          ...(params.seed !== undefined ? { seed: params.seed } : {}),
          ...(onToken
            ? {
                onToken: (...args: Parameters<typeof onToken>) => {
                  pending.streamed = true;
                  onToken(...args);
                },
              }
            : {}),
        },
        streamed: false,
        resolve: settle(resolve),
        reject: settle(reject),
      };
      this.queue.push(pending);
      signal?.addEventListener('abort', onAbort, { once: true });
      // Wait one macrotask so requests issued together (Promise.all over acts) share a batch.
      if (!this.running) setImmediate(() => void this.drain());
    });
  }

  async completeAll(prompts: string[], params: SamplingParams): Promise<Completion[]> {
    return Promise.all(prompts.map((p) => this.complete(p, params)));
  }

  /**
   * One engine batch. If it fails, each request is run again on its own, so a bad request (a prompt
   * that encodes to no tokens, say) fails alone and the rest of its batch is served; a seeded request
   * samples the same tokens alone as in a batch.
   */
  private async run(batch: Pending[]): Promise<void> {
    try {
      // Each request keeps its own seed: batch composition must not change what it samples.
      const { seed: _first, ...shared } = batch[0]!.params;
      const out = await this.engine.generate(
        batch.map((p) => p.prompt),
        shared,
        { seeds: batch.map((p) => p.params.seed), rows: batch.map((p) => p.control) },
      );
      batch.forEach((p, i) => (p.control.signal?.aborted ? p.reject(new GenerationAbortedError()) : p.resolve(out[i]!)));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // A request that already streamed tokens fails rather than streaming them twice.
      for (const p of batch) {
        if (p.streamed) p.reject(err);
        else await this.run([p]);
      }
    }
  }

  /**
   * Fair queueing: a prompt's rank is how many of its group's prompts were batched before it (served
   * so far plus those ahead of it in the queue). The best-ranked prompt (oldest on ties) chooses the
   * batch's parameters, and the batch takes the best-ranked prompts with those parameters, so a group
   * that has had many prompts served waits behind one that has had few.
   */
  private nextBatch(): Pending[] {
    const ahead = new Map<string, number>();
    const ranked = this.queue.map((p, at) => {
      const rank = (this.served.get(p.group) ?? 0) + (ahead.get(p.group) ?? 0);
      ahead.set(p.group, (ahead.get(p.group) ?? 0) + 1);
      return { p, rank, at, key: paramsKey(p.params) };
    });
    ranked.sort((a, b) => a.rank - b.rank || a.at - b.at);
    const key = ranked[0]!.key;
    const batch = new Set(ranked.filter((r) => r.key === key).slice(0, this.maxBatch).map((r) => r.p));
    this.queue = this.queue.filter((p) => !batch.has(p));
    for (const p of batch) this.served.set(p.group, (this.served.get(p.group) ?? 0) + 1);
    // A group with nothing left waiting starts afresh if it comes back (the map stays small).
    const waiting = new Set(this.queue.map((p) => p.group));
    for (const g of this.served.keys()) if (!waiting.has(g)) this.served.delete(g);
    return [...batch];
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.nextBatch();
        this.batchSizes.push(batch.length);
        await this.run(batch);
        // Let requests triggered by the results just delivered join the next batch.
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      this.running = false;
    }
  }
}

function paramsKey(p: SamplingParams): string {
  return JSON.stringify([p.maxNewTokens, p.temperature, p.topP, p.stop, p.topLogprobs ?? 0]);
}
