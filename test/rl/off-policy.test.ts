/** Asynchronous RL's pure parts: the schedule's launches and idle shares, off-policy weights, and their effect on the loss. */
import * as tf from '@tensorflow/tfjs';
import { behaviourWeights, stalenessHistogram } from '../../src/rl/off-policy';
import { policyLoss } from '../../src/rl/policy-loss';
import { lossNormOf } from '../../src/rl/agg-loss';
import { idleShare, stepsToLaunch } from '../../src/rl/schedule';

test('a step launches its own rollout and the next maxStaleness ones, none past the last step', () => {
  expect(stepsToLaunch(1, 10, 0)).toEqual([1]);
  expect(stepsToLaunch(1, 10, 2)).toEqual([1, 2, 3]);
  expect(stepsToLaunch(9, 10, 2)).toEqual([9, 10]);
});

test('idle share: the part of a window no rollout covered, overlaps counted once, a running one up to the end', () => {
  expect(idleShare([], 0, 10)).toBe(1);
  expect(idleShare([{ started: 0, ended: 10 }], 0, 10)).toBe(0);
  expect(idleShare([{ started: 2, ended: 6 }, { started: 4, ended: 8 }], 0, 10)).toBeCloseTo(0.4);
  expect(idleShare([{ started: -5, ended: 1 }, { started: 7 }], 0, 10)).toBeCloseTo(0.6);
});

test('behaviour weights: π_prox/π_behav, dropped above the cap (decoupled) or truncated at it (tis)', () => {
  const prox = [Math.log(0.5), Math.log(0.9), Math.log(0.6)];
  const behav = [Math.log(0.5), Math.log(0.1), Math.log(0.3)];
  const d = behaviourWeights(prox, behav, 'decoupled', 5);
  expect(d.weights[0]).toBeCloseTo(1);
  expect(d.weights[1]).toBe(0);
  expect(d.weights[2]).toBeCloseTo(2);
  expect(d.capped).toEqual([false, true, false]);
  expect(behaviourWeights(prox, behav, 'tis', 5).weights[1]).toBe(5);
  expect(() => behaviourWeights(prox, behav.slice(1), 'tis', 5)).toThrow(/3 proximal logprobs for 2/);
  expect(stalenessHistogram([3, 3, 2, 1], 3)).toEqual({ '0': 2, '1': 1, '2': 1 });
});

test('the weights scale each token of the clipped loss, and a zero weight takes the token out of the gradient', () => {
  const logprob = tf.variable(tf.tensor2d([[-1, -2, -0.5]]));
  const old = tf.tensor2d([[-1.1, -1.9, -0.5]]);
  const advantages = tf.tensor2d([[1]]);
  const mask = tf.tensor2d([[1, 1, 1]]);
  const norm = lossNormOf([[1, 1, 1]], 3);
  const clip = { clipLow: 0.2, clipHigh: 0.2, dualClipC: 3 };
  const loss = (weights?: tf.Tensor2D) => policyLoss({ logprob, oldLogprob: old, advantages, mask, clip, aggMode: 'token-mean', norm, ...(weights ? { weights } : {}) }).loss;
  expect(loss(tf.tensor2d([[1, 1, 1]])).dataSync()[0]).toBeCloseTo(loss().dataSync()[0]!, 6);
  const g = tf.grad(() => loss(tf.tensor2d([[2, 0, 1]])) as tf.Tensor)(logprob as unknown as tf.Tensor);
  const plain = tf.grad(() => loss() as tf.Tensor)(logprob as unknown as tf.Tensor);
  const [gw, gp] = [g.dataSync(), plain.dataSync()];
  expect(gw[0]).toBeCloseTo(2 * gp[0]!, 6);
  expect(Math.abs(gw[1]!)).toBe(0);
  expect(gw[2]).toBeCloseTo(gp[2]!, 6);
});
