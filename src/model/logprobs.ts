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

/** Logprob of each target and entropy of each next-token distribution, both [rows, len]. */
export interface TargetStats {
  logp: tf.Tensor2D;
  entropy: tf.Tensor2D;
}

/** log softmax(logits / temperature), [rows·len, V]. */
function temperedLogSoftmax(model: Gpt, p: Packed, temperature: number): tf.Tensor2D {
  const logits = model.forward(p.ids, p.positions, p.keys);
  const flat = tf.reshape(logits, [p.rows * p.len, model.config.vocabSize]);
  return tf.logSoftmax(temperature === 1 ? flat : tf.div(flat, temperature)) as tf.Tensor2D;
}

/** Σ_v lsm·oneHot(target): log p(target), [rows, len]. Uses logSoftmax·oneHot: wasm has no gather gradient. */
function pickTargets(lsm: tf.Tensor2D, p: Packed): tf.Tensor2D {
  const picked = tf.sum(tf.mul(lsm, oneHotFloat(p.targets, lsm.shape[1])), -1);
  return tf.reshape(picked, [p.rows, p.len]);
}

/**
 * log p(target) under softmax(logits / temperature), per position, and the entropy of that
 * distribution: verl divides the actor's logits by the rollout temperature before both.
 */
export function targetLogprobsAndEntropy(model: Gpt, p: Packed, temperature = 1): TargetStats {
  const lsm = temperedLogSoftmax(model, p, temperature);
  // H = -Σ p log p: verl's entropy_from_logits (logsumexp - Σ softmax·logits) of the tempered logits.
  const entropy = tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1));
  return { logp: pickTargets(lsm, p), entropy: tf.reshape(entropy, [p.rows, p.len]) };
}

/** log p(target) per position, [rows, len], under softmax(logits / temperature). */
export function targetLogprobs(model: Gpt, p: Packed, temperature = 1): tf.Tensor2D {
  return pickTargets(temperedLogSoftmax(model, p, temperature), p);
}

/**
 * log p(tokens[r][t] | tokens[r][<t]) under softmax(logits / temperature), per row; entry 0 is 0
 * (no context). Rows are processed in chunks to bound memory.
 */
export function sequenceLogprobs(model: Gpt, tokens: number[][], chunk = 32, temperature = 1): number[][] {
  const out: number[][] = [];
  for (let start = 0; start < tokens.length; start += chunk) {
    const part = tokens.slice(start, start + chunk);
    const full = Math.max(...part.map((r) => r.length));
    if (full < 2) {
      for (const r of part) out.push(r.map(() => 0));
      continue;
    }
    const p = pack(part, model.config.maxSeq);
    const lp = tf.tidy(() => targetLogprobs(model, p, temperature));
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
