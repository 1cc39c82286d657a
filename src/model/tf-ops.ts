import * as tf from '@tensorflow/tfjs';
import { LAYER_NORM_EPS } from './arch';

const GELU_C = Math.sqrt(2 / Math.PI);

/**
 * Float one-hot. tfjs-wasm's OneHot kernel ignores the dtype argument and writes int32 bit
 * patterns (1 becomes 1.4e-45 as float32), so build int32 and cast.
 */
export function oneHotFloat(indices: tf.Tensor, depth: number): tf.Tensor {
  return tf.cast(tf.oneHot(tf.cast(indices, 'int32') as tf.Tensor1D, depth), 'float32');
}

export function layerNorm<T extends tf.Tensor>(x: T, g: tf.Tensor, b: tf.Tensor): T {
  const mean = tf.mean(x, -1, true);
  const xc = tf.sub(x, mean);
  const variance = tf.mean(tf.mul(xc, xc), -1, true);
  return tf.add(tf.mul(tf.mul(xc, tf.rsqrt(tf.add(variance, LAYER_NORM_EPS))), g), b) as T;
}

/**
 * gelu with the tanh approximation (ONNX Gelu approximate='tanh'), written with the identity
 * 0.5·(1 + tanh(z)) = sigmoid(2z): tfjs-wasm's sigmoid is much faster than its tanh.
 */
export function geluTanh<T extends tf.Tensor>(x: T): T {
  const z2 = tf.mul(tf.add(x, tf.mul(tf.mul(tf.mul(x, x), x), 0.044715)), 2 * GELU_C);
  return tf.mul(x, tf.sigmoid(z2)) as T;
}

function swapLastTwo(t: tf.Tensor): tf.Tensor {
  const perm = t.shape.map((_, i) => i);
  perm[t.rank - 1] = t.rank - 2;
  perm[t.rank - 2] = t.rank - 1;
  return tf.transpose(t, perm);
}

/**
 * a·b (same batch dims, no broadcasting) whose gradients are also plain a·b products.
 * tfjs-wasm only takes its fast XNNPACK path for untransposed operands; the transposed
 * products of tf.matMul's own gradient ran at ~0.5 GFLOP/s and made up 90% of a train step.
 * An explicit transpose is a cheap copy by comparison.
 */
export const matMulFast = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const [a, b, save] = args as [tf.Tensor, tf.Tensor, tf.GradSaveFunc];
  save([a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor, tf.Tensor];
      return [tf.matMul(dy, swapLastTwo(sb)), tf.matMul(swapLastTwo(sa), dy)];
    },
  };
}) as <T extends tf.Tensor>(a: T, b: tf.Tensor) => T;

/**
 * table[ids] for 1-D int32 ids, equal to oneHot(ids)·table. The forward uses gather (cheap);
 * the gradient is oneHot(ids)ᵀ·dy because tfjs-wasm has no UnsortedSegmentSum, which
 * gather's own gradient needs.
 */
export const embedLookup = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const [table, ids, save] = args as [tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  save([ids]);
  const rows = table.shape[0];
  return {
    value: tf.gather(table, ids),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sids] = saved as [tf.Tensor1D];
      return [tf.matMul(tf.transpose(oneHotFloat(sids, rows)), dy), tf.zerosLike(sids)];
    },
  };
}) as (table: tf.Tensor, ids: tf.Tensor1D) => tf.Tensor2D;
