import * as ort from 'onnxruntime-node';
import { type GptConfig, headDim } from '../model/arch';
import { ONNX_IO } from '../model/onnx-export';
import type { KvPingPong } from './kv-cache';

/** onnxruntime-node session of an exportOnnx decoder, with typed calls for its two uses. */
export class DecoderSession {
  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly cfg: GptConfig,
  ) {}

  static async create(onnx: Uint8Array, cfg: GptConfig, threads: number): Promise<DecoderSession> {
    const session = await ort.InferenceSession.create(onnx, {
      graphOptimizationLevel: 'all',
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    return new DecoderSession(session, cfg);
  }

  release(): Promise<void> {
    return this.session.release();
  }

  /**
   * s new tokens per row against a cache of T - s positions: reads kv.past(n, T - s),
   * writes kv.next(n, T) and swaps. Returns logits [n, s, V].
   */
  async step(ids: BigInt64Array, pos: BigInt64Array, mask: BigInt64Array, n: number, s: number, T: number, kv: KvPingPong): Promise<Float32Array> {
    const { nHeads, nLayers, vocabSize } = this.cfg;
    const hd = headDim(this.cfg);
    const feeds = inputFeeds(ids, pos, mask, n, s, T);
    const past = kv.past(n, T - s);
    const present = kv.next(n, T);
    const logits = new Float32Array(n * s * vocabSize);
    const fetches: Record<string, ort.Tensor> = { [ONNX_IO.logits]: new ort.Tensor('float32', logits, [n, s, vocabSize]) };
    for (let i = 0; i < nLayers; i++) {
      feeds[ONNX_IO.pastKey(i)] = new ort.Tensor('float32', past[2 * i] as Float32Array, [n, nHeads, T - s, hd]);
      feeds[ONNX_IO.pastValue(i)] = new ort.Tensor('float32', past[2 * i + 1] as Float32Array, [n, nHeads, T - s, hd]);
      fetches[ONNX_IO.presentKey(i)] = new ort.Tensor('float32', present[2 * i] as Float32Array, [n, nHeads, T, hd]);
      fetches[ONNX_IO.presentValue(i)] = new ort.Tensor('float32', present[2 * i + 1] as Float32Array, [n, nHeads, T, hd]);
    }
    // Preallocated outputs: onnxruntime writes into our buffers instead of allocating new ones.
    await this.session.run(feeds, fetches);
    kv.swap();
    return logits;
  }

  /** Full forward of [n, L] with an empty past; only the logits [n, L, V] are fetched. */
  async full(ids: BigInt64Array, pos: BigInt64Array, mask: BigInt64Array, n: number, L: number): Promise<Float32Array> {
    const feeds = inputFeeds(ids, pos, mask, n, L, L);
    const empty = [n, this.cfg.nHeads, 0, headDim(this.cfg)];
    for (let i = 0; i < this.cfg.nLayers; i++) {
      feeds[ONNX_IO.pastKey(i)] = new ort.Tensor('float32', new Float32Array(0), empty);
      feeds[ONNX_IO.pastValue(i)] = new ort.Tensor('float32', new Float32Array(0), empty);
    }
    const out = await this.session.run(feeds, [ONNX_IO.logits]);
    return (out[ONNX_IO.logits] as ort.Tensor).data as Float32Array;
  }
}

function inputFeeds(ids: BigInt64Array, pos: BigInt64Array, mask: BigInt64Array, n: number, s: number, T: number): Record<string, ort.Tensor> {
  return {
    [ONNX_IO.inputIds]: new ort.Tensor('int64', ids, [n, s]),
    [ONNX_IO.positionIds]: new ort.Tensor('int64', pos, [n, s]),
    [ONNX_IO.attentionMask]: new ort.Tensor('int64', mask, [n, T]),
  };
}
