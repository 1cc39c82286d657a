import * as tf from '@tensorflow/tfjs';
import type { Gpt } from './gpt';
import { oneHotFloat } from './tf-ops';

/** Token rows laid out for one forward pass that predicts every next token. */
export interface Packed {
  rows: number;
  len: number;
  ids: tf.Tensor2D;
  positions: tf.Tensor2D;
  keys: tf.Tensor2D;
  targets: tf.Tensor1D;
}

/** Inputs are tokens[:, :-1], targets tokens[:, 1:]; right padding needs no key mask under causality. */
export function pack(tokens: number[][], maxSeq: number): Packed {
  const rows = tokens.length;
  const full = Math.max(...tokens.map((r) => r.length));
  if (full > maxSeq) throw new RangeError(`sequence of ${full} tokens exceeds maxSeq ${maxSeq}`);
  const len = full - 1;
  const ids = new Int32Array(rows * len);
  const targets = new Int32Array(rows * len);
  const positions = new Int32Array(rows * len);
  for (let r = 0; r < rows; r++) {
    const row = tokens[r] as number[];
    for (let t = 0; t < len; t++) {
      ids[r * len + t] = row[t] ?? 0;
      targets[r * len + t] = row[t + 1] ?? 0;
      positions[r * len + t] = t;
    }
  }
  return {
    rows,
    len,
    ids: tf.tensor2d(ids, [rows, len], 'int32'),
    positions: tf.tensor2d(positions, [rows, len], 'int32'),
    keys: tf.ones([rows, len], 'int32') as tf.Tensor2D,
    targets: tf.tensor1d(targets, 'int32'),
  };
}

export function disposePacked(p: Packed): void {
  tf.dispose([p.ids, p.positions, p.keys, p.targets]);
}

/** Per-row values shifted to target alignment (entry t of the result is about token t+1). */
export function shifted(src: number[][] | undefined, rows: number, len: number): Float32Array {
  const out = new Float32Array(rows * len);
  if (!src) return out;
  for (let r = 0; r < rows; r++) {
    const row = src[r] ?? [];
    for (let t = 0; t < len; t++) out[r * len + t] = row[t + 1] ?? 0;
  }
  return out;
}

/** log p(target) per position, [rows, len]. Uses logSoftmax·oneHot: wasm has no gather gradient. */
export function targetLogprobs(model: Gpt, p: Packed): tf.Tensor2D {
  const logits = model.forward(p.ids, p.positions, p.keys);
  const V = model.config.vocabSize;
  const flat = tf.reshape(logits, [p.rows * p.len, V]);
  const picked = tf.sum(tf.mul(tf.logSoftmax(flat), oneHotFloat(p.targets, V)), -1);
  return tf.reshape(picked, [p.rows, p.len]);
}

/**
 * log p(tokens[r][t] | tokens[r][<t]) under the model, per row; entry 0 is 0 (no context).
 * Rows are processed in chunks to bound memory.
 */
export function sequenceLogprobs(model: Gpt, tokens: number[][], chunk = 32): number[][] {
  const out: number[][] = [];
  for (let start = 0; start < tokens.length; start += chunk) {
    const part = tokens.slice(start, start + chunk);
    const full = Math.max(...part.map((r) => r.length));
    if (full < 2) {
      for (const r of part) out.push(r.map(() => 0));
      continue;
    }
    const p = pack(part, model.config.maxSeq);
    const lp = tf.tidy(() => targetLogprobs(model, p));
    const data = lp.dataSync() as Float32Array;
    lp.dispose();
    disposePacked(p);
    part.forEach((row, r) => {
      const res = new Array<number>(row.length).fill(0);
      for (let t = 1; t < row.length; t++) res[t] = data[r * p.len + t - 1] as number;
      out.push(res);
    });
  }
  return out;
}
