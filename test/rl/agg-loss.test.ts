/**
 * verl's agg_loss modes on a hand-computed 3 × 4 loss matrix with masks of unequal length:
 *   row 0: 1 2 3 4, mask 1 1 0 0 → sum 3,  2 tokens
 *   row 1: 5 6 7 8, mask 1 1 1 1 → sum 26, 4 tokens
 *   row 2: 9 9 9 9, mask 0 0 0 0 → sum 0,  0 tokens (not a sequence of the mean)
 * tokens 6, seqs 2.
 */
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode } from '../../src/config/schema';
import { initTfBackend } from '../../src/model/backend';
import { aggLoss, lossNormOf } from '../../src/rl/agg-loss';

beforeAll(async () => {
  await initTfBackend();
});

const LOSS = [
  [1, 2, 3, 4],
  [5, 6, 7, 8],
  [9, 9, 9, 9],
];
const MASK = [
  [1, 1, 0, 0],
  [1, 1, 1, 1],
  [0, 0, 0, 0],
];

const value = (rows: number[], mode: LossAggMode, norm = lossNormOf(MASK, 4)): number => {
  const l = tf.tensor2d(rows.map((r) => LOSS[r] as number[]));
  const m = tf.tensor2d(rows.map((r) => MASK[r] as number[]));
  const out = aggLoss(l, m, mode, norm);
  const v = out.dataSync()[0] as number;
  tf.dispose([l, m, out]);
  return v;
};

test('lossNormOf counts tokens and rows with a token', () => {
  expect(lossNormOf(MASK, 4)).toEqual({ tokens: 6, seqs: 2, scaleFactor: 4 });
});

test.each<[LossAggMode, number]>([
  // (3 + 26) / 6
  ['token-mean', 29 / 6],
  // (3 + 26) / 2
  ['seq-mean-token-sum', 14.5],
  // (3/2 + 26/4) / 2 = (1.5 + 6.5) / 2
  ['seq-mean-token-mean', 4],
  // (3 + 26) / 2 sequences / scaleFactor 4
  ['seq-mean-token-sum-norm', 29 / 8],
])('%s', (mode, expected) => {
  expect(value([0, 1, 2], mode)).toBeCloseTo(expected, 5);
});

test.each<LossAggMode>(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])(
  '%s: parts aggregated with the whole batch’s denominators sum to the whole',
  (mode) => {
    const norm = lossNormOf(MASK, 4);
    const whole = value([0, 1, 2], mode, norm);
    expect(value([0], mode, norm) + value([1, 2], mode, norm)).toBeCloseTo(whole, 5);
  },
);

test('parts aggregated with their own denominators do not sum to the whole (why the norm is shared)', () => {
  // token-mean of row 0 alone is 3/2, of rows 1-2 is 26/4: 8 ≠ 29/6.
  expect(value([0], 'token-mean', lossNormOf([MASK[0] as number[]], 4)) + value([1, 2], 'token-mean', lossNormOf([MASK[1] as number[], MASK[2] as number[]], 4))).toBeCloseTo(8, 5);
});
