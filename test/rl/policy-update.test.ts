/**
 * updatePolicy on a tiny model: epochs × mini-batches of optimiser steps, verl's on-policy case,
 * deterministic shuffling, the KL terms against a reference checkpoint, and progress callbacks.
 */
import * as tf from '@tensorflow/tfjs';
import { RlSchema } from '../../src/config/schema';
import type { Sample } from '../../src/domain/types';
import { initTfBackend } from '../../src/model/backend';
import type { Checkpoint } from '../../src/model/checkpoint';
import { Gpt } from '../../src/model/gpt';
import { initWeights } from '../../src/model/init';
import { mulberry32 } from '../../src/domain/rng';
import { rowsByLength, sequenceLogprobs } from '../../src/rl/trainer';
import { miniBatchRows, updatePolicy, type PolicyUpdateProgress, type PolicyUpdateOptions } from '../../src/rl/policy-update';

const config = { vocabSize: 16, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const ckpt: Checkpoint = { config, weights: initWeights(config, 3), step: 10 };
const T = 0.8;

let samples: Sample[];

beforeAll(async () => {
  await initTfBackend();
  samples = rollout();
});

function logprobs(weights: Checkpoint['weights'], prompt: number[], response: number[], temperature = T): number[] {
  const model = Gpt.fromWeights(config, weights);
  try {
    return (sequenceLogprobs(model, [[...prompt, ...response]], 32, temperature)[0] as number[]).slice(prompt.length);
  } finally {
    model.dispose();
  }
}

/** Two prompts × four episodes; logprobs as the engine records them (the checkpoint's, at T). */
function rollout(): Sample[] {
  const rand = mulberry32(5);
  const out: Sample[] = [];
  const rewards = [
    [1, 0, 0, 1],
    [0, 1, 0, 0],
  ];
  rewards.forEach((groupRewards, g) => {
    const prompt = [1, 2 + g];
    groupRewards.forEach((reward, e) => {
      const response = Array.from({ length: 3 + ((g + e) % 3) }, () => 4 + Math.floor(rand() * 12));
      out.push({
        promptTokens: prompt,
        responseTokens: response,
        logprobs: logprobs(ckpt.weights, prompt, response),
        lossMask: response.map(() => 1),
        reward,
        metadata: { role: 'single', episodeId: `e${g}-${e}`, groupId: `g${g}`, turn: 0, weightVersion: 1 },
      });
    });
  });
  return out;
}


function options(rl: Record<string, unknown>, extra: Partial<PolicyUpdateOptions> = {}): PolicyUpdateOptions {
  return {
    rl: RlSchema.parse({ learningRate: 3e-2, temperature: T, promptsPerStep: 2, ...rl }),
    step: 11,
    resetOptimizer: true,
    microBatchRows: 3,
    seed: 7,
    ...extra,
  };
}

const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);

test('one epoch, one mini-batch: one step on-policy, ratio exactly 1, nothing clipped', async () => {
  const r = await updatePolicy(ckpt, samples, options({}));
  expect(r.optimizerSteps).toBe(1);
  expect(r.approxKl).toBe(0);
  expect(r.pgClipFrac).toBe(0);
  expect(r.pgClipFracLower).toBe(0);
  expect(r.clipFraction).toBe(0);
  expect(r.rows).toBe(8);
  expect(r.tokens).toBe(sum(samples.map((s) => s.responseTokens.length)));
  expect(r.meanResponseLength).toBeCloseTo(r.tokens / 8, 10);
  expect(r.meanReward).toBeCloseTo(3 / 8, 10);
  expect(r.checkpoint.step).toBe(11);
  expect(r.entropy).toBeGreaterThan(0);
  expect(r.entropy).toBeLessThanOrEqual(Math.log(config.vocabSize));
  expect(r.gradNorm).toBeGreaterThan(0);
  expect(r.klLoss).toBeUndefined();
  // The rewarded responses become likelier, the others less likely.
  const best = samples[0]!;
  const worst = samples[1]!;
  expect(sum(logprobs(r.checkpoint.weights, best.promptTokens, best.responseTokens))).toBeGreaterThan(sum(best.logprobs));
  expect(sum(logprobs(r.checkpoint.weights, worst.promptTokens, worst.responseTokens))).toBeLessThan(sum(worst.logprobs));
});

test('four epochs of two mini-batches: eight steps move the ratio away from 1 and the clip acts', async () => {
  const r = await updatePolicy(ckpt, samples, options({ ppoEpochs: 4, miniBatches: 2 }));
  expect(r.optimizerSteps).toBe(8);
  expect(r.approxKl).not.toBe(0);
  expect(r.pgClipFrac).toBeGreaterThan(0);
  expect(r.clipFraction).toBe(r.pgClipFrac);
  expect(r.nonFiniteGradSteps).toBe(0);
});

test('the same seed gives the same bytes; another seed shuffles mini-batches differently', async () => {
  const opts = { ppoEpochs: 2, miniBatches: 2 };
  const a = await updatePolicy(ckpt, samples, options(opts));
  const b = await updatePolicy(ckpt, samples, options(opts));
  const c = await updatePolicy(ckpt, samples, options(opts, { seed: 8 }));
  for (const [name, w] of Object.entries(a.checkpoint.weights)) expect(Buffer.from(w.buffer).equals(Buffer.from(b.checkpoint.weights[name]!.buffer))).toBe(true);
  const differs = Object.entries(a.checkpoint.weights).some(([name, w]) => !Buffer.from(w.buffer).equals(Buffer.from(c.checkpoint.weights[name]!.buffer)));
  expect(differs).toBe(true);
});

describe('micro-batches cut by length (rl.microBatch.byLength)', () => {
  const maxDiff = (a: Checkpoint, b: Checkpoint): number =>
    Math.max(...Object.keys(a.weights).map((k) => Math.max(...Array.from(a.weights[k]!).map((v, i) => Math.abs(v - b.weights[k]![i]!)))));

  test('rowsByLength: shortest first, ties in their order', () => {
    expect(rowsByLength([[1, 2, 3], [1], [1, 2], [4], [1, 2, 3, 4]])).toEqual([1, 3, 2, 0, 4]);
  });

  test('the same update and metrics up to float rounding, with epochs × mini-batches and the proximal pass', async () => {
    // Responses of 3–5 tokens in passes of 3 rows: sorting changes which rows share a pass, so only
    // the order of the gradients' float sums differs. Adam divides by the gradient's scale, which
    // lifts that rounding on near-zero gradients to about 1e-5 of the step, compounding over steps:
    // hence a realistic learning rate and a bound relative to how far the weights moved.
    for (const [rl, extra] of [
      [{ ppoEpochs: 2, miniBatches: 2, learningRate: 3e-4 }, {}],
      [{ ppoEpochs: 2, miniBatches: 2, learningRate: 3e-4, async: { maxStaleness: 1, correction: 'decoupled', isCap: 5 } }, { policyVersion: 2 }],
    ] as const) {
      const plain = await updatePolicy(ckpt, samples, options(rl, extra));
      const sorted = await updatePolicy(ckpt, samples, options(rl, { ...extra, byLength: true }));
      const moved = maxDiff(plain.checkpoint, ckpt);
      expect(moved).toBeGreaterThan(1e-4);
      expect(maxDiff(plain.checkpoint, sorted.checkpoint)).toBeLessThan(1e-3 * moved);
      for (const key of ['loss', 'pgLoss', 'approxKl', 'entropy', 'gradNorm', 'pgClipFrac'] as const) expect(sorted[key]).toBeCloseTo(plain[key], 5);
      expect(sorted.tokensRun).toBe(plain.tokensRun);
      // What sorting is for: fewer padded positions computed for the same rows.
      expect(sorted.paddedTokensRun).toBeLessThan(plain.paddedTokensRun);
      expect(sorted.optimizerSteps).toBe(plain.optimizerSteps);
    }
  });
});

test('miniBatchRows keeps groups whole, covers every row once and drops empty mini-batches', () => {
  const groups = ['a', 'a', 'b', 'c', 'c', 'c', 'd'];
  const parts = miniBatchRows(groups, 3, mulberry32(1));
  expect(parts).toHaveLength(3);
  expect(parts.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  for (const part of parts) {
    const inPart = new Set(part.map((r) => groups[r]));
    for (const g of inPart) expect(part.filter((r) => groups[r] === g)).toHaveLength(groups.filter((x) => x === g).length);
  }
  expect(miniBatchRows(['a', 'b'], 4, mulberry32(1))).toHaveLength(2);
});

describe('KL against the reference policy', () => {
  test('the KL loss is reported; zero on-policy against itself, positive once the policy moved', async () => {
    const first = await updatePolicy(ckpt, samples, options({ useKlLoss: true }, { reference: ckpt }));
    expect(first.klLoss).toBeCloseTo(0, 6);
    const later = await updatePolicy(ckpt, samples, options({ useKlLoss: true, klLossCoef: 0.1, ppoEpochs: 3, miniBatches: 2 }, { reference: ckpt }));
    expect(later.klLoss).toBeGreaterThan(0);
  });

  test('the KL loss pulls the update toward the reference', async () => {
    const without = await updatePolicy(ckpt, samples, options({ ppoEpochs: 3, miniBatches: 2 }));
    const strong = await updatePolicy(ckpt, samples, options({ ppoEpochs: 3, miniBatches: 2, useKlLoss: true, klLossCoef: 50, klLossType: 'k2' }, { reference: ckpt }));
    const drift = (w: Checkpoint['weights']): number =>
      sum(samples.map((s) => Math.abs(sum(logprobs(w, s.promptTokens, s.responseTokens)) - sum(s.logprobs))));
    expect(drift(strong.checkpoint.weights)).toBeLessThan(drift(without.checkpoint.weights));
  });

  test('the reward penalty is zero when behaviour and reference agree, positive when they do not', async () => {
    const same = await updatePolicy(ckpt, samples, options({ useKlInReward: true }, { reference: ckpt }));
    expect(same.rewardKlPenalty).toBeCloseTo(0, 5);
    const other: Checkpoint = { config, weights: initWeights(config, 99), step: 0 };
    const differs = await updatePolicy(ckpt, samples, options({ useKlInReward: true, klPenalty: 'low_var_kl' }, { reference: other }));
    expect(differs.rewardKlPenalty).toBeGreaterThan(0);
    // The task reward is reported unchanged.
    expect(differs.meanReward).toBeCloseTo(3 / 8, 10);
  });

  test('a KL option without a reference fails and says why', async () => {
    await expect(updatePolicy(ckpt, samples, options({ useKlLoss: true }))).rejects.toThrow(/reference/);
    await expect(updatePolicy(ckpt, samples, options({ useKlInReward: true }))).rejects.toThrow(/reference/);
  });
});

test('onProgress is awaited between micro-batches; a throwing callback aborts without leaking tensors', async () => {
  const seen: PolicyUpdateProgress[] = [];
  await updatePolicy(ckpt, samples, options({ ppoEpochs: 2, miniBatches: 2, useKlLoss: true }, { reference: ckpt, onProgress: async (p) => void seen.push(p) }));
  expect(seen.filter((p) => p.phase === 'reference').at(-1)).toEqual({ phase: 'reference', done: 8, total: 8 });
  const updates = seen.filter((p) => p.phase === 'update');
  // 4 steps of 4 rows in micro-batches of 3: 2 micro-batches each.
  expect(updates).toHaveLength(8);
  expect(updates.at(-1)).toEqual({ phase: 'update', done: 3, total: 4, microBatch: 2, microBatches: 2 });

  const before = tf.memory().numTensors;
  let calls = 0;
  const cancelled = updatePolicy(ckpt, samples, options({ ppoEpochs: 2 }, {
    onProgress: async () => {
      if (++calls === 2) throw new Error('cancelled');
    },
  }));
  await expect(cancelled).rejects.toThrow('cancelled');
  expect(tf.memory().numTensors).toBe(before);
});

describe('off-policy correction (rl.async)', () => {
  /** The same samples as if generated by other weights: behaviour logprobs far below the policy's. */
  const stale = () => samples.map((s) => ({ ...s, logprobs: s.logprobs.map((l) => l - 3), metadata: { ...s.metadata, weightVersion: 0 } }));
  const moved = (a: Checkpoint, b: Checkpoint) => Object.keys(a.weights).some((k) => Array.from(a.weights[k]!).some((v, i) => v !== b.weights[k]![i]));

  test('decoupled: tokens whose weight π_prox/π_behav exceeds the cap are dropped, so an all-capped step leaves the policy as it was', async () => {
    // exp(3) ≈ 20 > cap 5 on every token: every weight is 0, no gradient at all, in the on-policy case and with epochs × mini-batches.
    for (const rl of [{}, { ppoEpochs: 2, miniBatches: 2 }]) {
      const async = { ...rl, async: { maxStaleness: 1, correction: 'decoupled', isCap: 5 } };
      const r = await updatePolicy(ckpt, stale(), options(async, { policyVersion: 1 }));
      expect(r.staleness).toEqual({ '1': samples.length });
      expect(r.offPolicyCapped).toBe(sum(samples.map((s) => s.responseTokens.length)));
      expect(r.offPolicyMeanWeight).toBe(0);
      expect(moved(r.checkpoint, ckpt)).toBe(false);
    }
    // Without the correction the same samples move the policy (one epoch, one mini-batch: the ratio is
    // taken against the current policy, verl's on-policy case).
    const plain = await updatePolicy(ckpt, stale(), options({ async: { maxStaleness: 1, correction: 'none' } }, { policyVersion: 1 }));
    expect(moved(plain.checkpoint, ckpt)).toBe(true);
  });

  test('tis: the same tokens are kept at weight cap, and the update equals the plain on-policy one scaled by it', async () => {
    const r = await updatePolicy(ckpt, stale(), options({ async: { maxStaleness: 1, correction: 'tis', isCap: 2 } }, { policyVersion: 1 }));
    expect(r.offPolicyMeanWeight).toBeCloseTo(2, 6);
    expect(moved(r.checkpoint, ckpt)).toBe(true);
    // On-policy ratio 1 and every weight 2: the policy-gradient loss is twice the plain one.
    const plain = await updatePolicy(ckpt, samples, options({}));
    expect(r.pgLoss).toBeCloseTo(2 * plain.pgLoss, 5);
  });
});
