/**
 * verl's kl_penalty estimators on hand-computed values (d = logprob - ref):
 *   k1 = d, abs = |d|, k2 = d²/2, k3 = e^{-d} + d - 1 clamped to [-10, 10].
 */
import * as tf from '@tensorflow/tfjs';
import type { KlKind } from '../../src/config/schema';
import { initTfBackend } from '../../src/model/backend';
import { klPenalty, klPenaltyTensor } from '../../src/rl/kl';

beforeAll(async () => {
  await initTfBackend();
});

// logprob -1, ref -1.5 (d = 0.5) and logprob -1.5, ref -1 (d = -0.5).
const CASES: Array<[KlKind, number, number]> = [
  ['kl', 0.5, -0.5],
  ['k1', 0.5, -0.5],
  ['abs', 0.5, 0.5],
  ['mse', 0.125, 0.125],
  ['k2', 0.125, 0.125],
  // k3: ref - logp = -0.5: e^-0.5 + 0.5 - 1 = 0.1065306597126; ref - logp = 0.5: e^0.5 - 0.5 - 1 = 0.1487212707001
  ['low_var_kl', 0.1065306597126, 0.1487212707001],
  ['k3', 0.1065306597126, 0.1487212707001],
];

test.each(CASES)('%s on numbers', (kind, above, below) => {
  expect(klPenalty(-1, -1.5, kind)).toBeCloseTo(above, 12);
  expect(klPenalty(-1.5, -1, kind)).toBeCloseTo(below, 12);
});

test.each(CASES)('%s on tensors equals the number form', (kind, above, below) => {
  const lp = tf.tensor1d([-1, -1.5]);
  const ref = tf.tensor1d([-1.5, -1]);
  const out = klPenaltyTensor(lp, ref, kind);
  const [a, b] = out.dataSync();
  expect(a).toBeCloseTo(above, 6);
  expect(b).toBeCloseTo(below, 6);
  tf.dispose([lp, ref, out]);
});

test('k3 is clamped to 10 at both extremes', () => {
  // ref - logp = 30 → clamped to 20: e^20 - 21 ≫ 10 → 10.
  expect(klPenalty(-30, 0, 'k3')).toBe(10);
  // ref - logp = -30 → clamped to -20: e^-20 + 19 ≈ 19 → 10.
  expect(klPenalty(0, -30, 'k3')).toBe(10);
  const out = klPenaltyTensor(tf.tensor1d([-30, 0]), tf.tensor1d([0, -30]), 'k3');
  expect([...out.dataSync()]).toEqual([10, 10]);
});

test('k3 gradient: d/dlogp (e^{ref-logp} - (ref-logp) - 1) = 1 - e^{ref-logp}, zero where clamped', () => {
  const ref = tf.tensor1d([-1.5, 0]);
  const g = tf.grad((lp: tf.Tensor) => tf.sum(klPenaltyTensor(lp, ref, 'k3')))(tf.tensor1d([-1, -30]));
  const [g0, g1] = g.dataSync();
  // 1 - e^-0.5 = 0.3934693402874
  expect(g0).toBeCloseTo(0.3934693402874, 6);
  expect(Math.abs(g1 as number)).toBe(0);
});
