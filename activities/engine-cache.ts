/**
 * Inference workers keep the engines of the newest weight versions loaded. Weights arrive by
 * reference (the ONNX blob published by publishWeights); a new version is loaded on first use.
 */
import type { BlobStore } from '../src/store/blob-store';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { loadTokenizer } from '../src/model/tokenizer';
import { ONNX_META, readOnnxMetadata } from '../src/model/onnx-export';
import type { GptConfig } from '../src/model/arch';
import type { WeightsInfo } from '../src/contracts/weights';

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

export class EngineCache {
  private readonly engines = new Map<string, Promise<BatchingEngine>>();

  constructor(
    private readonly store: BlobStore,
    private readonly maxBatch: number,
  ) {}

  get(weights: WeightsInfo): Promise<BatchingEngine> {
    const key = weights.onnx.sha256;
    let engine = this.engines.get(key);
    if (!engine) {
      engine = this.load(weights);
      engine.catch(() => this.engines.delete(key));
      this.engines.set(key, engine);
      while (this.engines.size > KEEP_VERSIONS) {
        const oldest = this.engines.keys().next().value as string;
        const evicted = this.engines.get(oldest);
        this.engines.delete(oldest);
        // Release once its in-flight batches are done; a failed load has nothing to release.
        evicted?.then((e) => e.release()).catch(() => undefined);
      }
    }
    return engine;
  }

  private load(weights: WeightsInfo): Promise<BatchingEngine> {
    return loadBatchingEngine(this.store, weights, this.maxBatch);
  }
}

/** The embedded engine of published weights (their ONNX blob), behind a batcher. */
export async function loadBatchingEngine(store: BlobStore, weights: WeightsInfo, maxBatch: number): Promise<BatchingEngine> {
  const bytes = await store.get(weights.onnx);
  const configJson = readOnnxMetadata(bytes)[ONNX_META.config];
  if (!configJson) throw new Error(`ONNX weights v${weights.version} carry no ${ONNX_META.config} metadata`);
  const config = JSON.parse(configJson) as GptConfig;
  const engine = await OrtEngine.create({ onnx: bytes, config, tokenizer: loadTokenizer(), weightVersion: weights.version, prefixCacheBytes: PREFIX_CACHE_BYTES });
  return new BatchingEngine(engine, maxBatch);
}
