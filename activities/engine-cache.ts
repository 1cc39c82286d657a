/**
 * Inference workers keep the engines of the newest weight versions loaded. Weights arrive by
 * reference (the ONNX blob or torch checkpoint published by publishWeights); a new version is loaded on first use.
 */
import type { BlobStore } from '../src/store/blob-store';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { ONNX_META, readOnnxMetadata } from '../src/model/onnx-export';
import type { GptConfig } from '../src/model/arch';
import type { WeightsInfo } from '../src/contracts/weights';
import { onnxOfWeights, tokenizerOfWeights, weightsKey } from '../src/model/hf-checkpoint';

/**
 * Versions kept loaded: asynchronous RL (rl.async.maxStaleness k) plays rollouts of up to k + 1
 * versions at once while the newest is evaluated, so a cache of two would reload engines in turn.
 */
const KEEP_VERSIONS = 4;

/**
 * KV the prefix cache of each engine may hold: tree branches and chains re-send their parent's
 * context, so its positions are reused instead of prefilled (src/engine/prefix-cache.ts).
 */
const PREFIX_CACHE_BYTES = 64 << 20;

interface Entry {
  engine: Promise<BatchingEngine>;
  /** Callers inside lease(): an evaluation holds its engine between requests, when no batch is queued. */
  leases: number;
}

export type EngineLoader = (weights: WeightsInfo) => Promise<BatchingEngine>;

export class EngineCache {
  private readonly entries = new Map<string, Entry>();
  private readonly load: EngineLoader;

  constructor(store: BlobStore, maxBatch: number, load?: EngineLoader) {
    this.load = load ?? ((weights) => loadBatchingEngine(store, weights, maxBatch));
  }

  /** The engine of these weights, for one request (the batcher keeps it alive while that is queued). */
  get(weights: WeightsInfo): Promise<BatchingEngine> {
    return this.entry(weights).engine;
  }

  /**
   * The engine of these weights for as long as `use` runs: a leased engine is never evicted (the
   * cache holds more than KEEP_VERSIONS while every one is leased, and sheds the extra at the next
   * load). Released as soon as its queue was empty, an evaluation's engine was disposed between two
   * of its requests when other weights filled the cache.
   */
  async lease<T>(weights: WeightsInfo, use: (engine: BatchingEngine) => Promise<T>): Promise<T> {
    const entry = this.entry(weights);
    entry.leases += 1;
    try {
      return await use(await entry.engine);
    } finally {
      entry.leases -= 1;
    }
  }

  private entry(weights: WeightsInfo): Entry {
    const key = weightsKey(weights);
    let entry = this.entries.get(key);
    if (!entry) {
      const created: Entry = { engine: this.load(weights), leases: 0 };
      created.engine.catch(() => {
        if (this.entries.get(key) === created) this.entries.delete(key);
      });
      this.entries.set(key, created);
      entry = created;
      // Past KEEP_VERSIONS the oldest engine nobody leases goes (a leased one stays, so a later
      // request for its weights finds it instead of loading a second copy).
      while (this.entries.size > KEEP_VERSIONS) {
        const victim = [...this.entries].find(([k, e]) => e.leases === 0 && k !== key);
        if (!victim) break;
        this.entries.delete(victim[0]);
        release(victim[1]);
      }
    }
    return entry;
  }
}

/** Frees an evicted engine once its in-flight batches are done; a failed load has nothing to free. */
function release(entry: Entry): void {
  entry.engine.then((e) => e.release()).catch(() => undefined);
}

/** The embedded engine of published weights (their ONNX blob, or the torch trainer's checkpoint, over the tokenizer it ships), behind a batcher. */
export async function loadBatchingEngine(store: BlobStore, weights: WeightsInfo, maxBatch: number): Promise<BatchingEngine> {
  const bytes = await onnxOfWeights(store, weights);
  const configJson = readOnnxMetadata(bytes)[ONNX_META.config];
  if (!configJson) throw new Error(`ONNX weights v${weights.version} carry no ${ONNX_META.config} metadata`);
  const config = JSON.parse(configJson) as GptConfig;
  const engine = await OrtEngine.create({ onnx: bytes, config, tokenizer: await tokenizerOfWeights(store, weights), weightVersion: weights.version, prefixCacheBytes: PREFIX_CACHE_BYTES });
  return new BatchingEngine(engine, maxBatch);
}
