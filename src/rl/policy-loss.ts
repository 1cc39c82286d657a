/**
 * The clipped PPO surrogate with DAPO's asymmetric clip and dual-clip PPO, as verl's
 * `compute_policy_loss_vanilla` (verl/trainer/ppo/core_algos.py):
 *
 *   ratio   = exp(clamp(logp - old, -20, 20))
 *   pg1     = -A · ratio
 *   pg2     = -A · clamp(ratio, 1 - clipLow, 1 + clipHigh)
 *   clip1   = max(pg1, pg2)
 *   pg3     = -A · c                                    (dual clip, c > 1)
 *   loss_t  = A < 0 ? min(pg3, clip1) : clip1
 *   loss    = aggLoss(loss_t · w)                        (w: off-policy weights, default 1)
 *
 * and its statistics, masked means over the trained tokens:
 *   clipFrac      share where pg2 > pg1 (the clip changed the loss)
 *   clipFracLower share where A < 0 and clip1 > pg3 (the dual clip changed it)
 *   ppoKl         mean of old - logp (clamped like the ratio)
 */
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode } from '../config/schema';
import { aggLoss, type LossNorm } from './agg-loss';

/** verl clamps the log-ratio before exp, so one wild token cannot overflow the loss. */
const LOG_RATIO_LIMIT = 20;

export interface ClipOptions {
  /** Ratio floor is 1 - clipLow (verl clip_ratio_low). */
  clipLow: number;
  /** Ratio ceiling is 1 + clipHigh (verl clip_ratio_high; DAPO's clip-higher raises it). */
  clipHigh: number;
  /** Dual-clip bound c > 1 for negative advantages (verl clip_ratio_c). */
  dualClipC: number;
}

export interface PolicyLossInput {
  /** log π_θ(token), [rows, len]; the loss is differentiated through it. */
  logprob: tf.Tensor2D;
  /** log π_old(token), [rows, len]; a constant. */
  oldLogprob: tf.Tensor2D;
  /** Advantages, [rows, len] or [rows, 1] (one per sequence, broadcast over its tokens). */
  advantages: tf.Tensor2D;
  /** 1 = trained token, [rows, len]. */
  mask: tf.Tensor2D;
  /** Per-token weights of the loss, [rows, len], constants (off-policy correction, src/rl/off-policy.ts). */
  weights?: tf.Tensor2D;
  clip: ClipOptions;
  aggMode: LossAggMode;
  norm: LossNorm;
}

export interface PolicyLossOutput {
  loss: tf.Scalar;
  /** Masked means over the tokens of `mask` (not over the mini-batch: callers weigh by tokens). */
  clipFrac: tf.Scalar;
  clipFracLower: tf.Scalar;
  ppoKl: tf.Scalar;
}

export function policyLoss(x: PolicyLossInput): PolicyLossOutput {
  const { clipLow, clipHigh, dualClipC } = x.clip;
  if (!(dualClipC > 1)) throw new RangeError(`dualClipC must be > 1 (verl clip_ratio_c), got ${dualClipC}`);
  return tf.tidy(() => {
    const logRatio = tf.clipByValue(tf.sub(x.logprob, x.oldLogprob), -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT);
    const ratio = tf.exp(logRatio);
    const negAdv = tf.neg(x.advantages);
    const pg1 = tf.mul(negAdv, ratio);
    const pg2 = tf.mul(negAdv, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh));
    const clip1 = tf.maximum(pg1, pg2);
    const pg3 = tf.mul(negAdv, dualClipC);
    const negative = tf.broadcastTo(tf.less(x.advantages, 0), clip1.shape);
    const clipped = tf.where(negative, tf.minimum(pg3, clip1), clip1) as tf.Tensor2D;
    const perToken = x.weights ? (tf.mul(clipped, x.weights) as tf.Tensor2D) : clipped;

    const tokens = tf.maximum(tf.sum(x.mask), 1);
    const maskedMean = (t: tf.Tensor): tf.Scalar => tf.div(tf.sum(tf.mul(t, x.mask)), tokens) as tf.Scalar;
    return {
      loss: aggLoss(perToken, x.mask, x.aggMode, x.norm),
      clipFrac: maskedMean(tf.cast(tf.greater(pg2, pg1), 'float32')),
      clipFracLower: maskedMean(tf.mul(tf.cast(tf.greater(clip1, pg3), 'float32'), tf.cast(negative, 'float32'))),
      ppoKl: maskedMean(tf.neg(logRatio)),
    };
  });
}
