/**
 * Reduces a per-token loss matrix to the scalar that is differentiated, as verl's `agg_loss`
 * (verl/trainer/ppo/core_algos.py) with its global-batch arguments: every denominator belongs to
 * the whole mini-batch (one optimiser step), not to the micro-batch being computed, so the
 * micro-batch losses, and therefore their gradients, sum exactly to the mini-batch's.
 *
 *   token-mean               Σ_rows Σ_t m·l / tokens
 *   seq-mean-token-sum       Σ_rows (Σ_t m·l) / seqs
 *   seq-mean-token-mean      Σ_rows (Σ_t m·l / (Σ_t m + 1e-8)) / seqs
 *   seq-mean-token-sum-norm  Σ_rows (Σ_t m·l) / seqs / scaleFactor   (Dr.GRPO, as verl ≥ 0.9 computes it:
 *                            seq-mean-token-sum divided by the constant; test/rl/verl-parity.test.ts)
 *
 * tokens and seqs count trained tokens and rows with at least one trained token in the
 * mini-batch: what verl's agg_loss computes when given the whole mini-batch (its seq_mask leaves
 * fully masked rows out). verl's engine path passes `global_batch_size` = all rows of the
 * mini-batch instead; the two differ only when a row has no trained token, and such rows never
 * reach the trainer here (buildPgBatch leaves them out).
 */
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode } from '../config/schema';

/** Denominators of one mini-batch. */
export interface LossNorm {
  /** Trained tokens (mask entries > 0). */
  tokens: number;
  /** Rows with at least one trained token. */
  seqs: number;
  /**
   * seq-mean-token-sum-norm's constant divisor (verl `loss_scale_factor`; verl's default is the
   * padded response length, i.e. the maximum response length).
   */
  scaleFactor: number;
}

/** verl adds this to per-row token counts in seq-mean-token-mean. */
const ROW_EPS = 1e-8;

/** The denominators of a mask, for aggregating it as one mini-batch. */
export function lossNormOf(mask: readonly (readonly number[])[], scaleFactor: number): LossNorm {
  let tokens = 0;
  let seqs = 0;
  for (const row of mask) {
    const n = row.reduce((a, m) => a + (m > 0 ? 1 : 0), 0);
    tokens += n;
    if (n > 0) seqs++;
  }
  return { tokens, seqs, scaleFactor };
}

/** Scalar loss from lossMat [rows, len] under mask [rows, len] (1 = trained). */
export function aggLoss(lossMat: tf.Tensor2D, mask: tf.Tensor2D, mode: LossAggMode, norm: LossNorm): tf.Scalar {
  return tf.tidy(() => {
    const masked = tf.mul(lossMat, mask);
    switch (mode) {
      case 'token-mean':
        return tf.div(tf.sum(masked), Math.max(norm.tokens, 1)) as tf.Scalar;
      case 'seq-mean-token-sum':
        return tf.div(tf.sum(masked), Math.max(norm.seqs, 1)) as tf.Scalar;
      case 'seq-mean-token-mean': {
        // A fully masked row has sum 0 and so adds 0, as verl's seq_mask makes it.
        const perRow = tf.div(tf.sum(masked, -1), tf.add(tf.sum(mask, -1), ROW_EPS));
        return tf.div(tf.sum(perRow), Math.max(norm.seqs, 1)) as tf.Scalar;
      }
      case 'seq-mean-token-sum-norm':
        return tf.div(tf.sum(masked), Math.max(norm.seqs, 1) * norm.scaleFactor) as tf.Scalar;
    }
  });
}
