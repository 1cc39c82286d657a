/**
 * Per-token KL estimators between the policy and the frozen reference policy, as verl's
 * `kl_penalty` (verl/trainer/ppo/core_algos.py; J. Schulman, "Approximating KL divergence").
 * Both forms compute the same formulas: numbers for the reward penalty (no gradient needed),
 * tensors for the KL loss (differentiated through `logprob`).
 *
 *   kl  | k1         logprob - ref
 *   abs             |logprob - ref|
 *   mse | k2        ½ (logprob - ref)²
 *   low_var_kl | k3 e^d - d - 1 with d = clamp(ref - logprob, -20, 20), clamped to [-10, 10]
 *
 * verl's straight-through variants ("k3+" etc.) and "full" are not offered.
 */
import * as tf from '@tensorflow/tfjs';
import type { KlKind } from '../config/schema';

/** verl clamps the log-ratio before exp and the k3 estimate after it, for numerical stability. */
const K3_LOG_RATIO_LIMIT = 20;
const K3_VALUE_LIMIT = 10;

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));

/** One token's KL estimate. */
export function klPenalty(logprob: number, refLogprob: number, kind: KlKind): number {
  switch (kind) {
    case 'kl':
    case 'k1':
      return logprob - refLogprob;
    case 'abs':
      return Math.abs(logprob - refLogprob);
    case 'mse':
    case 'k2':
      return 0.5 * (logprob - refLogprob) ** 2;
    case 'low_var_kl':
    case 'k3': {
      const d = clamp(refLogprob - logprob, -K3_LOG_RATIO_LIMIT, K3_LOG_RATIO_LIMIT);
      return clamp(Math.exp(d) - d - 1, -K3_VALUE_LIMIT, K3_VALUE_LIMIT);
    }
  }
}

/** Element-wise KL estimate of two equally shaped tensors; gradients flow through `logprob`. */
export function klPenaltyTensor<T extends tf.Tensor>(logprob: T, refLogprob: tf.Tensor, kind: KlKind): T {
  return tf.tidy(() => {
    switch (kind) {
      case 'kl':
      case 'k1':
        return tf.sub(logprob, refLogprob) as T;
      case 'abs':
        return tf.abs(tf.sub(logprob, refLogprob)) as T;
      case 'mse':
      case 'k2':
        return tf.mul(tf.square(tf.sub(logprob, refLogprob)), 0.5) as T;
      case 'low_var_kl':
      case 'k3': {
        const d = tf.clipByValue(tf.sub(refLogprob, logprob), -K3_LOG_RATIO_LIMIT, K3_LOG_RATIO_LIMIT);
        const k3 = tf.sub(tf.sub(tf.exp(d), d), 1);
        return tf.clipByValue(k3, -K3_VALUE_LIMIT, K3_VALUE_LIMIT) as T;
      }
    }
  });
}
