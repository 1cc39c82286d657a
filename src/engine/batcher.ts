/**
 * Continuous-batching front for a PolicyEngine: requests that arrive while the device is busy are
 * grouped by sampling parameters and run together as the next batch. One batch is in flight at a
 * time, which is what "one slot per device" means for an engine that batches internally.
 */
import type { Completion, SamplingParams } from '../domain/types';
import type { PolicyEngine } from './types';

interface Pending {
  prompt: string;
  params: SamplingParams;
  resolve(c: Completion): void;
  reject(err: unknown): void;
}

export class BatchingEngine {
  private queue: Pending[] = [];
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

  get weightVersion(): number {
    return this.engine.weightVersion;
  }

  /** The engine's teacher-forced scoring, outside the generation batches. */
  scoreTokens(promptIds: number[], tokenIds: number[], temperature = 1): Promise<number[]> {
    if (!this.engine.scoreTokens) return Promise.reject(new Error('this engine cannot score tokens'));
    return this.engine.scoreTokens(promptIds, tokenIds, temperature);
  }

  complete(prompt: string, params: SamplingParams): Promise<Completion> {
    return new Promise<Completion>((resolve, reject) => {
      this.queue.push({ prompt, params, resolve, reject });
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
        { seeds: batch.map((p) => p.params.seed) },
      );
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      for (const p of batch) await this.run([p]);
    }
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const key = paramsKey(this.queue[0]!.params);
        const batch: Pending[] = [];
        const rest: Pending[] = [];
        for (const p of this.queue) {
          if (batch.length < this.maxBatch && paramsKey(p.params) === key) batch.push(p);
          else rest.push(p);
        }
        this.queue = rest;
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
