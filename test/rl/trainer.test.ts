import * as tf from '@tensorflow/tfjs';
import type { GptConfig } from '../../src/model/arch';
import { Adam } from '../../src/model/adam';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { type TrainBatch, computeGradients, sequenceLogprobs, trainStep } from '../../src/rl/trainer';
import { maxWeightDiff, sharpWeights } from '../model/helpers';
import { mulberry32 } from '../../src/domain/rng';

const cfg: GptConfig = { vocabSize: 24, maxSeq: 16, dModel: 32, nLayers: 2, nHeads: 2, dFf: 64 };
const SEP = 1;

beforeAll(async () => {
  await initTfBackend();
});

/** [a b c d SEP a b c d]: the second half is trained on and is predictable from the first. */
function copyBatch(rows: number, seed: number): TrainBatch {
  const rand = mulberry32(seed);
  const tokens: number[][] = [];
  const lossMask: number[][] = [];
  for (let r = 0; r < rows; r++) {
    const src = Array.from({ length: 4 }, () => 2 + Math.floor(rand() * (cfg.vocabSize - 2)));
    tokens.push([...src, SEP, ...src]);
    lossMask.push([0, 0, 0, 0, 0, 1, 1, 1, 1]);
  }
  return { tokens, lossMask };
}

function maskedMean(lp: number[][], mask: number[][]): number {
  let s = 0;
  let n = 0;
  lp.forEach((row, r) => row.forEach((v, t) => {
    if ((mask[r] as number[])[t]) {
      s += v;
      n++;
    }
  }));
  return s / n;
}

test('SFT loss decreases on a copy task', () => {
  const model = Gpt.random(cfg, 1);
  const opt = new Adam(model.params, { lr: 3e-3 });
  const losses: number[] = [];
  for (let step = 0; step < 80; step++) losses.push(trainStep(model, copyBatch(32, step), opt).loss);
  const first = losses.slice(0, 5).reduce((a, b) => a + b) / 5;
  const last = losses.slice(-5).reduce((a, b) => a + b) / 5;
  expect(first).toBeGreaterThan(Math.log(cfg.vocabSize) - 0.3);
  expect(last).toBeLessThan(first * 0.6);
  model.dispose();
  opt.dispose();
});

test('reported SFT loss equals the masked mean NLL from sequenceLogprobs; ragged rows are padded', () => {
  const model = Gpt.random(cfg, 2);
  const opt = new Adam(model.params, { lr: 0 });
  const batch = copyBatch(6, 9);
  batch.tokens[2] = (batch.tokens[2] as number[]).slice(0, 7);
  batch.lossMask[2] = (batch.lossMask[2] as number[]).slice(0, 7);
  const lp = sequenceLogprobs(model, batch.tokens);
  expect(lp.map((r) => r.length)).toEqual(batch.tokens.map((r) => r.length));
  expect(lp.every((r) => r[0] === 0)).toBe(true);
  const res = trainStep(model, batch, opt);
  expect(res.tokens).toBe(5 * 4 + 2);
  expect(res.loss).toBeCloseTo(-maskedMean(lp, batch.lossMask), 4);
  model.dispose();
  opt.dispose();
});

test('policy gradient moves logprobs in the direction of the advantage', () => {
  const batch = copyBatch(4, 5);
  for (const sign of [1, -1]) {
    const model = Gpt.random(cfg, 3);
    const opt = new Adam(model.params, { lr: 1e-2 });
    const before = maskedMean(sequenceLogprobs(model, batch.tokens), batch.lossMask);
    const res = trainStep(model, { ...batch, advantages: [sign, sign, sign, sign] }, opt);
    const after = maskedMean(sequenceLogprobs(model, batch.tokens), batch.lossMask);
    // On-policy ratio is 1, so the surrogate is exactly -A.
    expect(res.loss).toBeCloseTo(-sign, 5);
    expect(res.clipFraction).toBe(0);
    expect(Math.sign(after - before)).toBe(sign);
    model.dispose();
    opt.dispose();
  }
});

test('clipped ratios give no gradient', () => {
  const model = Gpt.random(cfg, 4);
  const opt = new Adam(model.params, { lr: 1e-2 });
  const batch = copyBatch(4, 6);
  const lp = sequenceLogprobs(model, batch.tokens);
  // Behaviour logprobs 1 nat lower: ratio e ≈ 2.7 > 1.2, a positive advantage is clipped.
  const old = lp.map((r) => r.map((v) => v - 1));
  const res = trainStep(model, { ...batch, advantages: [1, 1, 1, 1], oldLogprobs: old }, opt);
  expect(res.clipFraction).toBe(1);
  expect(res.gradNorm).toBe(0);
  expect(res.loss).toBeCloseTo(-1.2, 4);
  // Same ratio with a negative advantage is not clipped (min picks the unclipped term).
  const neg = trainStep(model, { ...batch, advantages: [-1, -1, -1, -1], oldLogprobs: old }, opt);
  expect(neg.gradNorm).toBeGreaterThan(0);
  model.dispose();
  opt.dispose();
});

test('no tensors leak across train steps', () => {
  const model = Gpt.random(cfg, 5);
  const opt = new Adam(model.params);
  trainStep(model, copyBatch(4, 1), opt);
  const n = tf.memory().numTensors;
  trainStep(model, copyBatch(4, 2), opt);
  trainStep(model, { ...copyBatch(4, 3), advantages: [1, -1, 0.5, 0] }, opt);
  sequenceLogprobs(model, copyBatch(3, 4).tokens);
  expect(tf.memory().numTensors).toBe(n);
  model.dispose();
  opt.dispose();
});

test('analytic gradients match central finite differences', () => {
  const weights = sharpWeights(cfg, 8, 3);
  const model = Gpt.fromWeights(cfg, weights);
  const batch = copyBatch(3, 12);
  const nll = (): number => -maskedMean(sequenceLogprobs(model, batch.tokens), batch.lossMask);
  const g = computeGradients(model, batch);
  expect(g.loss).toBeCloseTo(nll(), 4);
  const eps = 1e-2;
  for (const name of ['wte', 'wpe', 'h.0.attn.wq', 'h.0.attn.wk', 'h.1.attn.wv', 'h.0.attn.bo', 'h.0.mlp.w1', 'h.1.mlp.w2', 'h.1.ln2.g', 'lnf.b', 'head']) {
    const grad = (g.grads[name] as tf.Tensor).dataSync();
    let idx = 0;
    for (let i = 1; i < grad.length; i++) if (Math.abs(grad[i] as number) > Math.abs(grad[idx] as number)) idx = i;
    const w = weights[name] as Float32Array;
    const orig = w[idx] as number;
    w[idx] = orig + eps;
    model.setWeights(weights);
    const up = nll();
    w[idx] = orig - eps;
    model.setWeights(weights);
    const down = nll();
    w[idx] = orig;
    model.setWeights(weights);
    const numeric = (up - down) / (2 * eps);
    const analytic = grad[idx] as number;
    expect(Math.abs(analytic)).toBeGreaterThan(1e-3);
    expect(Math.abs(numeric - analytic)).toBeLessThan(2e-3 + 0.03 * Math.abs(analytic));
  }
  tf.dispose(Object.values(g.grads));
  model.dispose();
});

test('micro-batches give the same update as the full batch', () => {
  const batch = { ...copyBatch(6, 13), advantages: [1, -0.5, 0.3, 0, 2, -1] };
  const results = [undefined, 2, 4].map((microBatchRows) => {
    const model = Gpt.random(cfg, 6);
    const opt = new Adam(model.params, { lr: 1e-2 });
    const r = trainStep(model, batch, opt, undefined, microBatchRows ? { microBatchRows } : {});
    const w = model.getWeights();
    model.dispose();
    opt.dispose();
    return { r, w };
  });
  const [full, ...parts] = results as [(typeof results)[number], ...typeof results];
  for (const p of parts) {
    expect(p.r.loss).toBeCloseTo(full.r.loss, 5);
    expect(p.r.gradNorm).toBeCloseTo(full.r.gradNorm, 4);
    expect(p.r.tokens).toBe(full.r.tokens);
    expect(maxWeightDiff(full.w, p.w)).toBeLessThan(1e-5);
  }
});
