import * as tf from '@tensorflow/tfjs';
import type { Adam } from './adam';
import type { Gpt } from './gpt';
import { disposePacked, pack, shifted, targetLogprobs } from './logprobs';

/**
 * One optimisation batch. Every per-token array is aligned with `tokens`: entry t concerns
 * predicting tokens[r][t] from tokens[r][0..t-1], so entry 0 is never trained on.
 */
export interface TrainBatch {
  /** Right-padded token rows (ragged rows are padded internally). */
  tokens: number[][];
  /** 1 = train on predicting this token. */
  lossMask: number[][];
  /** One advantage per row; present = clipped policy-gradient loss, absent = SFT. */
  advantages?: number[];
  /** Behaviour-policy logprobs; absent = on-policy (ratio 1, gradient of plain PG). */
  oldLogprobs?: number[][];
  /** PPO clip range; default 0.2. */
  clipEps?: number;
}

export interface TrainStepResult {
  /** Masked mean loss before the update. */
  loss: number;
  /** Tokens that contributed to the loss. */
  tokens: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Share of trained tokens whose ratio was clipped (policy-gradient steps only). */
  clipFraction?: number;
}

export interface Gradients {
  /** This batch's loss contribution: masked sum of per-token losses / normalizer. */
  loss: number;
  /** Tokens that contributed to the loss. */
  tokens: number;
  /** Trained tokens whose ratio was clipped (policy-gradient batches only). */
  clipped?: number;
  /** d loss / d weight by weight name (weightShapes names); the caller disposes them. */
  grads: tf.NamedTensorMap;
}

/** Tokens the loss is taken over (lossMask entries from t = 1 on). */
export function countLossTokens(batch: TrainBatch): number {
  let n = 0;
  for (const row of batch.lossMask) for (let t = 1; t < row.length; t++) if ((row[t] as number) > 0) n++;
  return n;
}

/**
 * Loss and gradients of one (micro-)batch without updating anything. Dividing by a shared
 * `normalizer` (default: this batch's token count) lets micro-batch gradients be summed
 * into exactly the full batch's gradient.
 */
export function computeGradients(model: Gpt, batch: TrainBatch, normalizer?: number): Gradients {
  const p = pack(batch.tokens, model.config.maxSeq);
  const maskArr = shifted(batch.lossMask, p.rows, p.len);
  const count = maskArr.reduce((a, b) => a + (b > 0 ? 1 : 0), 0);
  if (count === 0 || p.len === 0) {
    disposePacked(p);
    return { loss: 0, tokens: 0, grads: {} };
  }
  const denom = normalizer ?? count;
  const mask = tf.tensor2d(maskArr, [p.rows, p.len]);
  const pg = batch.advantages !== undefined;
  const adv = pg ? tf.tensor2d(Float32Array.from(batch.advantages as number[]), [p.rows, 1]) : undefined;
  const old = pg && batch.oldLogprobs ? tf.tensor2d(shifted(batch.oldLogprobs, p.rows, p.len), [p.rows, p.len]) : undefined;
  const eps = batch.clipEps ?? 0.2;
  let clipped: number | undefined;

  const lossFn = (): tf.Scalar => {
    const logp = targetLogprobs(model, p);
    if (!adv) return tf.div(tf.neg(tf.sum(tf.mul(logp, mask))), denom) as tf.Scalar;
    // Reading logp back to JS is the stop-gradient tfjs lacks for the on-policy case.
    const behaviour = old ?? tf.tensor2d(logp.dataSync() as Float32Array, [p.rows, p.len]);
    const ratio = tf.exp(tf.sub(logp, behaviour));
    const bounded = tf.clipByValue(ratio, 1 - eps, 1 + eps);
    const surrogate = tf.minimum(tf.mul(ratio, adv), tf.mul(bounded, adv));
    clipped = countClipped(ratio.dataSync() as Float32Array, maskArr, eps);
    return tf.div(tf.neg(tf.sum(tf.mul(surrogate, mask))), denom) as tf.Scalar;
  };

  const { value, grads } = tf.variableGrads(lossFn, model.variableList);
  const loss = value.dataSync()[0] as number;
  const named: tf.NamedTensorMap = {};
  for (const [name, v] of model.params) {
    const g = grads[v.name];
    if (g) named[name] = g;
  }
  tf.dispose([value, mask, ...(adv ? [adv] : []), ...(old ? [old] : [])]);
  disposePacked(p);
  return { loss, tokens: count, grads: named, ...(clipped !== undefined ? { clipped } : {}) };
}

export interface TrainStepOptions {
  /**
   * Rows per forward/backward pass; the gradients of the passes are summed before the single
   * optimiser update, so the result equals one full-batch step with less peak memory.
   */
  microBatchRows?: number;
}

/** One optimiser update: SFT cross-entropy, or the clipped policy-gradient loss when advantages are given. */
export function trainStep(model: Gpt, batch: TrainBatch, optimizer: Adam, lr?: number, options: TrainStepOptions = {}): TrainStepResult {
  const rows = batch.tokens.length;
  const step = Math.max(1, Math.min(options.microBatchRows ?? rows, rows));
  const total = countLossTokens(batch);
  if (total === 0) return { loss: 0, tokens: 0, gradNorm: 0 };
  let loss = 0;
  let clipped: number | undefined;
  let acc: tf.NamedTensorMap = {};
  for (let start = 0; start < rows; start += step) {
    const part = step === rows ? batch : sliceRows(batch, start, start + step);
    const g = computeGradients(model, part, total);
    loss += g.loss;
    if (g.clipped !== undefined) clipped = (clipped ?? 0) + g.clipped;
    acc = accumulate(acc, g.grads);
  }
  const gradNorm = optimizer.apply(acc, lr);
  tf.dispose(Object.values(acc));
  return { loss, tokens: total, gradNorm, ...(clipped !== undefined ? { clipFraction: clipped / total } : {}) };
}

function sliceRows(batch: TrainBatch, from: number, to: number): TrainBatch {
  const out: TrainBatch = { tokens: batch.tokens.slice(from, to), lossMask: batch.lossMask.slice(from, to) };
  if (batch.advantages) out.advantages = batch.advantages.slice(from, to);
  if (batch.oldLogprobs) out.oldLogprobs = batch.oldLogprobs.slice(from, to);
  if (batch.clipEps !== undefined) out.clipEps = batch.clipEps;
  return out;
}

/** Sums `next` into `acc`, disposing what is no longer needed. */
function accumulate(acc: tf.NamedTensorMap, next: tf.NamedTensorMap): tf.NamedTensorMap {
  if (Object.keys(acc).length === 0) return next;
  for (const [name, g] of Object.entries(next)) {
    const prev = acc[name];
    acc[name] = prev ? tf.add(prev, g) : g;
    if (prev) tf.dispose([prev, g]);
  }
  return acc;
}

function countClipped(ratio: Float32Array, mask: Float32Array, eps: number): number {
  let n = 0;
  for (let i = 0; i < ratio.length; i++) {
    const r = ratio[i] as number;
    if ((mask[i] as number) > 0 && (r < 1 - eps || r > 1 + eps)) n++;
  }
  return n;
}

// Kept here too: callers think of recomputing logprobs as part of training.
export { sequenceLogprobs } from './logprobs';
