/**
 * The losses, in one file: SFT's cross-entropy and the actor's GRPO objective as verl's actor
 * computes it (policy-gradient loss − entropy bonus + KL loss; verl/trainer/ppo/core_algos.py and
 * its dp_actor). Each takes per-token tensors and the mini-batch's shared denominators (LossNorm) and
 * returns a scalar to differentiate; the trainer (trainer.ts) packs rows, runs the model and takes
 * gradients.
 */
import * as tf from '@tensorflow/tfjs';
import type { KlKind, LossAggMode } from '../config/schema';
import { aggLoss, type LossNorm } from './agg-loss';
import { klPenaltyTensor } from './kl';
import { policyLoss, type PolicyLossOutput } from './policy-loss';

/** The policy-gradient objective: verl's actor loss (pg loss - entropy bonus + KL loss). */
export interface PgLossOptions {
  /** Ratio floor 1 - clipLow and ceiling 1 + clipHigh (verl clip_ratio_low / clip_ratio_high). */
  clipLow: number;
  clipHigh: number;
  /** Dual-clip bound for negative advantages, > 1 (verl clip_ratio_c). */
  dualClipC: number;
  aggMode: LossAggMode;
  /**
   * seq-mean-token-sum-norm's divisor (verl loss_scale_factor). Absent: the longest row of the
   * batch given to trainStep, minus one (verl's default is the padded response width).
   */
  lossScaleFactor?: number;
  /** Logits are divided by it before log-softmax and entropy (verl passes the rollout temperature); > 0. */
  temperature: number;
  /** Subtracts entropyCoeff · aggLoss(entropy) (verl entropy_coeff). */
  entropyCoeff: number;
  /** Adds coef · aggLoss(kl(logp, ref)) (verl use_kl_loss); needs batch.refLogprobs. */
  klLoss?: { coef: number; kind: KlKind };
}

export const DEFAULT_PG_LOSS: PgLossOptions = {
  clipLow: 0.2,
  clipHigh: 0.2,
  dualClipC: 3,
  aggMode: 'token-mean',
  temperature: 1,
  entropyCoeff: 0,
};

/** SFT: the mean negative log-likelihood of the trained tokens (over the mini-batch's tokens). */
export function sftLoss(logprob: tf.Tensor2D, mask: tf.Tensor2D, norm: LossNorm): tf.Scalar {
  return tf.div(tf.neg(tf.sum(tf.mul(logprob, mask))), norm.tokens) as tf.Scalar;
}

export interface ActorLossInput {
  /** log π_θ(token) under the training temperature, [rows, len]. */
  logprob: tf.Tensor2D;
  /** The behaviour policy's logprobs (a constant). */
  oldLogprob: tf.Tensor2D;
  /** [rows, len] or [rows, 1]. */
  advantages: tf.Tensor2D;
  mask: tf.Tensor2D;
  /** Per-token entropy of the policy, [rows, len]. */
  entropy: tf.Tensor2D;
  /** The reference policy's logprobs; needed when options.klLoss is set. */
  refLogprob?: tf.Tensor2D;
  /** Per-token weights of the policy-gradient loss (off-policy correction). */
  weights?: tf.Tensor2D;
}

export interface ActorLossTerms {
  /** What is differentiated: pg − entropyCoeff · entropy + coef · KL. */
  total: tf.Scalar;
  /** The clipped policy-gradient loss and its statistics. */
  pg: PolicyLossOutput;
  /**
   * aggLoss of the per-token entropy (the loss's mode and the mini-batch's denominators): the
   * entropy bonus before its coefficient, and this (micro-)batch's share of verl's actor/entropy.
   */
  entropy: tf.Scalar;
  /** The aggregated KL loss, when options.klLoss is set. */
  klLoss?: tf.Scalar;
}

/** verl's actor objective on one (micro-)batch. */
export function actorLoss(x: ActorLossInput, options: PgLossOptions, norm: LossNorm): ActorLossTerms {
  const pg = policyLoss({
    logprob: x.logprob,
    oldLogprob: x.oldLogprob,
    advantages: x.advantages,
    mask: x.mask,
    ...(x.weights ? { weights: x.weights } : {}),
    clip: { clipLow: options.clipLow, clipHigh: options.clipHigh, dualClipC: options.dualClipC },
    aggMode: options.aggMode,
    norm,
  });
  let total: tf.Scalar = pg.loss;
  // Always taken (the metric); with entropyCoeff 0 it is not on the path to `total`, so no gradient flows through it.
  const entropy = aggLoss(x.entropy, x.mask, options.aggMode, norm);
  if (options.entropyCoeff !== 0) total = tf.sub(total, tf.mul(entropy, options.entropyCoeff));
  let klLoss: tf.Scalar | undefined;
  if (options.klLoss) {
    if (!x.refLogprob) throw new Error('the KL loss needs the reference policy\'s logprobs');
    klLoss = aggLoss(klPenaltyTensor(x.logprob, x.refLogprob, options.klLoss.kind), x.mask, options.aggMode, norm);
    total = tf.add(total, tf.mul(klLoss, options.klLoss.coef));
  }
  return { total, pg, entropy, ...(klLoss ? { klLoss } : {}) };
}
