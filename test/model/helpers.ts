import * as tf from '@tensorflow/tfjs';
import * as ort from 'onnxruntime-node';
import { type GptConfig, type WeightMap, headDim, weightShapes } from '../../src/model/arch';
import { initWeights } from '../../src/model/init';
import type { Gpt } from '../../src/model/gpt';
import { ONNX_IO } from '../../src/model/onnx-export';

export const TINY: GptConfig = { vocabSize: 61, maxSeq: 32, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };

/** Init weights scaled up, LN and biases non-trivial, so parity is checked far from a uniform output. */
export function sharpWeights(cfg: GptConfig, seed: number, factor = 8): WeightMap {
  const w = initWeights(cfg, seed);
  for (const [name, [, ...rest]] of weightShapes(cfg).map(([n, s]) => [n, s] as const)) {
    const a = w[name] as Float32Array;
    const vector = rest.length === 0;
    for (let i = 0; i < a.length; i++) {
      if (name.endsWith('.g')) a[i] = 1 + 0.3 * Math.sin(i + name.length);
      else if (vector) a[i] = 0.1 * Math.cos(3 * i + name.length);
      else a[i] = (a[i] as number) * factor;
    }
  }
  return w;
}

/** tfjs logits [b][s][V] for explicit ids, positions and key mask. */
export function tfLogits(model: Gpt, ids: number[][], pos: number[][], mask: number[][]): Float32Array {
  const b = ids.length;
  const s = (ids[0] as number[]).length;
  const t = (x: number[][]): tf.Tensor2D => tf.tensor2d(x.flat(), [b, s], 'int32');
  const [a, p, m] = [t(ids), t(pos), t(mask)];
  const out = model.forward(a, p, m);
  const data = out.dataSync() as Float32Array;
  tf.dispose([a, p, m, out]);
  return new Float32Array(data);
}

export interface OrtStep {
  logits: Float32Array;
  present: ort.Tensor[];
}

/** One raw ORT call; `past` empty means past length 0. */
export async function ortRun(
  session: ort.InferenceSession,
  cfg: GptConfig,
  ids: number[][],
  pos: number[][],
  mask: number[][],
  past: ort.Tensor[] = [],
): Promise<OrtStep> {
  const b = ids.length;
  const s = (ids[0] as number[]).length;
  const i64 = (x: number[][]): ort.Tensor =>
    new ort.Tensor('int64', BigInt64Array.from(x.flat().map(BigInt)), [x.length, (x[0] as number[]).length]);
  const feeds: Record<string, ort.Tensor> = {
    [ONNX_IO.inputIds]: i64(ids),
    [ONNX_IO.positionIds]: i64(pos),
    [ONNX_IO.attentionMask]: i64(mask),
  };
  const empty = (): ort.Tensor => new ort.Tensor('float32', new Float32Array(0), [b, cfg.nHeads, 0, headDim(cfg)]);
  for (let i = 0; i < cfg.nLayers; i++) {
    feeds[ONNX_IO.pastKey(i)] = past[2 * i] ?? empty();
    feeds[ONNX_IO.pastValue(i)] = past[2 * i + 1] ?? empty();
  }
  const out = await session.run(feeds);
  const present: ort.Tensor[] = [];
  for (let i = 0; i < cfg.nLayers; i++) {
    present.push(out[ONNX_IO.presentKey(i)] as ort.Tensor, out[ONNX_IO.presentValue(i)] as ort.Tensor);
  }
  expect(s).toBeGreaterThan(0);
  return { logits: (out[ONNX_IO.logits] as ort.Tensor).data as Float32Array, present };
}

/** Largest |difference| of any weight between two weight maps of the same model (names from the first). */
export function maxWeightDiff(a: Record<string, Float32Array>, b: Record<string, Float32Array>): number {
  let m = 0;
  for (const [name, w] of Object.entries(a)) {
    const other = b[name] as Float32Array;
    for (let i = 0; i < w.length; i++) m = Math.max(m, Math.abs((w[i] as number) - (other[i] as number)));
  }
  return m;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
}
