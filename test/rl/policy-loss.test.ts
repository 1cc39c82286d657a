/**
 * verl's compute_policy_loss_vanilla on hand-computed tokens, clipLow 0.2, clipHigh 0.3 (DAPO-style
 * asymmetric), dual clip c = 3. Per token: pg1 = -A·r, pg2 = -A·clamp(r, 0.8, 1.3),
 * clip1 = max(pg1, pg2), loss = A < 0 ? min(-A·c, clip1) : clip1.
 *
 *   row A, A = +1:  r 1.5  pg1 -1.5, pg2 -1.3 → -1.3   clipped (high)          d/dlogp 0
 *                   r 0.5  pg1 -0.5, pg2 -0.8 → -0.5   not clipped             d/dlogp -A·r = -0.5
 *   row B, A = -1:  r 0.5  pg1  0.5, pg2  0.8 →  0.8   clipped (low)           d/dlogp 0
 *                   r 4    pg1  4,   pg2  1.3 →  4 → min(3, 4) = 3  dual-clipped  d/dlogp 0
 *   row C, A = -2:  r 1.1  pg1  2.2, pg2  2.2 →  2.2   inside                  d/dlogp 2.2
 *                   r 1.45 pg1  2.9, pg2  2.6 →  2.9 (< 6) not clipped        d/dlogp 2.9
 *   row D, A =  0:  r 2    pg1 0, pg2 0 → 0, not clipped (pg2 > pg1 is false)   d/dlogp 0
 *                   r 10   masked out
 *
 * 7 tokens, loss sum -1.3 - 0.5 + 0.8 + 3 + 2.2 + 2.9 + 0 = 7.1
 * clipFrac 2/7, clipFracLower 1/7, ppoKl = -ln(1.5·0.5·0.5·4·1.1·1.45·2)/7 = -ln(4.785)/7
 */
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode } from '../../src/config/schema';
import { initTfBackend } from '../../src/model/backend';
import { lossNormOf } from '../../src/rl/agg-loss';
import { policyLoss, type ClipOptions } from '../../src/rl/policy-loss';

beforeAll(async () => {
  await initTfBackend();
});

const RATIOS = [
  [1.5, 0.5],
  [0.5, 4],
  [1.1, 1.45],
  [2, 10],
];
const ADV = [1, -1, -2, 0];
const MASK = [
  [1, 1],
  [1, 1],
  [1, 1],
  [1, 0],
];
const OLD = [
  [-1, -2],
  [-0.5, -3],
  [-1.2, -0.7],
  [-2, -4],
];
const CLIP: ClipOptions = { clipLow: 0.2, clipHigh: 0.3, dualClipC: 3 };

function run(mode: LossAggMode, clip: ClipOptions = CLIP, scaleFactor = 2) {
  const old = tf.tensor2d(OLD);
  const logp = tf.tensor2d(OLD.map((row, r) => row.map((o, t) => o + Math.log((RATIOS[r] as number[])[t] as number))));
  const adv = tf.tensor2d(ADV.map((a) => [a]));
  const mask = tf.tensor2d(MASK);
  const norm = lossNormOf(MASK, scaleFactor);
  const out = policyLoss({ logprob: logp, oldLogprob: old, advantages: adv, mask, clip, aggMode: mode, norm });
  const grad = tf.grad((lp: tf.Tensor) => policyLoss({ logprob: lp as tf.Tensor2D, oldLogprob: old, advantages: adv, mask, clip, aggMode: mode, norm }).loss)(logp);
  const res = {
    loss: out.loss.dataSync()[0] as number,
    clipFrac: out.clipFrac.dataSync()[0] as number,
    clipFracLower: out.clipFracLower.dataSync()[0] as number,
    ppoKl: out.ppoKl.dataSync()[0] as number,
    grad: grad.arraySync() as number[][],
  };
  tf.dispose([old, logp, adv, mask, out.loss, out.clipFrac, out.clipFracLower, out.ppoKl, grad]);
  return res;
}

test('token-mean loss, clip fractions, ppo_kl and gradient', () => {
  const r = run('token-mean');
  expect(r.loss).toBeCloseTo(7.1 / 7, 5);
  expect(r.clipFrac).toBeCloseTo(2 / 7, 6);
  expect(r.clipFracLower).toBeCloseTo(1 / 7, 6);
  expect(r.ppoKl).toBeCloseTo(-Math.log(4.785) / 7, 5);
  const expected = [
    [0, -0.5 / 7],
    [0, 0],
    [2.2 / 7, 2.9 / 7],
    [0, 0],
  ];
  r.grad.forEach((row, i) => row.forEach((g, t) => expect(g).toBeCloseTo((expected[i] as number[])[t] as number, 5)));
});

test.each<[LossAggMode, number]>([
  // per row sums: A -1.8, B 3.8, C 5.1, D 0; 4 sequences
  ['seq-mean-token-sum', 7.1 / 4],
  // per row means: A -0.9, B 1.9, C 2.55, D 0 → sum 3.55; 4 sequences
  ['seq-mean-token-mean', 3.55 / 4],
  // 7.1 / 4 sequences / scaleFactor 2
  ['seq-mean-token-sum-norm', 7.1 / 8],
])('%s aggregation of the same per-token losses', (mode, expected) => {
  expect(run(mode).loss).toBeCloseTo(expected, 5);
});

test('symmetric clip 0.2 caps the positive-advantage ratio at 1.2 instead of 1.3', () => {
  // Row A token 0 becomes -1.2: sum 7.2 over 7 tokens.
  expect(run('token-mean', { clipLow: 0.2, clipHigh: 0.2, dualClipC: 3 }).loss).toBeCloseTo(7.2 / 7, 5);
});

test('a larger dual-clip bound leaves ratio 4 unclipped for a negative advantage', () => {
  // c = 5: row B token 1 keeps 4 (< 5): sum 8.1; no dual clipping.
  const r = run('token-mean', { ...CLIP, dualClipC: 5 });
  expect(r.loss).toBeCloseTo(8.1 / 7, 5);
  expect(r.clipFracLower).toBe(0);
});

test('ratio 1 everywhere: loss -A on average, nothing clipped, ppo_kl 0', () => {
  const lp = tf.tensor2d(OLD);
  const adv = tf.tensor2d(ADV.map((a) => [a]));
  const mask = tf.tensor2d(MASK);
  const out = policyLoss({ logprob: lp, oldLogprob: lp, advantages: adv, mask, clip: CLIP, aggMode: 'token-mean', norm: lossNormOf(MASK, 1) });
  // Σ -A over the 7 tokens: (-1 - 1 + 1 + 1 + 2 + 2 + 0) / 7
  expect(out.loss.dataSync()[0]).toBeCloseTo(4 / 7, 6);
  expect(out.clipFrac.dataSync()[0]).toBe(0);
  expect(out.clipFracLower.dataSync()[0]).toBe(0);
  expect(out.ppoKl.dataSync()[0]).toBe(0);
  tf.dispose([lp, adv, mask, out.loss, out.clipFrac, out.clipFracLower, out.ppoKl]);
});

test('dual-clip bound must exceed 1', () => {
  expect(() => run('token-mean', { ...CLIP, dualClipC: 1 })).toThrow(/dualClipC/);
});
