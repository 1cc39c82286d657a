/**
 * Gradient accumulation: micro-batch gradients, each aggregated with the whole mini-batch's
 * denominators, sum exactly to the full mini-batch gradient, for every aggregation mode and with
 * every loss term on (clipped off-policy ratios, entropy bonus, KL loss, temperature ≠ 1).
 */
import * as tf from '@tensorflow/tfjs';
import type { LossAggMode } from '../../src/config/schema';
import type { GptConfig } from '../../src/model/arch';
import { Adam } from '../../src/model/adam';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { mulberry32 } from '../../src/domain/rng';
import { type PgLossOptions, type TrainBatch, batchLossNorm, computeGradients, sequenceLogprobs, trainStep } from '../../src/rl/trainer';
import { maxWeightDiff } from '../model/helpers';

const cfg: GptConfig = { vocabSize: 16, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const MODES: LossAggMode[] = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'];
const T = 0.7;

beforeAll(async () => {
  await initTfBackend();
});

/** Rows of unequal length with masks of unequal length, one of them fully masked. */
function pgBatch(model: Gpt): TrainBatch {
  const rand = mulberry32(21);
  const lengths = [7, 4, 9, 5, 6];
  const tokens = lengths.map((n) => Array.from({ length: n }, () => 2 + Math.floor(rand() * (cfg.vocabSize - 2))));
  const lossMask = tokens.map((row, r) => row.map((_, t) => (r === 3 ? 0 : t >= 2 && !(r === 2 && t === 5) ? 1 : 0)));
  const lp = sequenceLogprobs(model, tokens, 32, T);
  // Behaviour logprobs up to ±0.6 nat away: many ratios fall outside [0.8, 1.28]; on alternate
  // tokens of the last row (advantage < 0) 1.5 nat lower still: ratio > e^0.9 > 3, dual-clipped.
  const oldLogprobs = lp.map((row, r) => row.map((v, t) => v + (rand() - 0.5) * 1.2 - (r === 4 && t % 2 === 0 ? 1.5 : 0)));
  const refLogprobs = lp.map((row) => row.map((v) => v - rand() * 0.5));
  return { tokens, lossMask, advantages: [1, -0.5, 0.3, -2, -1.5], oldLogprobs, refLogprobs };
}

function rows(batch: TrainBatch, from: number, to: number): TrainBatch {
  return {
    tokens: batch.tokens.slice(from, to),
    lossMask: batch.lossMask.slice(from, to),
    advantages: batch.advantages!.slice(from, to),
    oldLogprobs: batch.oldLogprobs!.slice(from, to),
    refLogprobs: batch.refLogprobs!.slice(from, to),
  };
}

const pgOptions = (aggMode: LossAggMode): PgLossOptions => ({
  clipLow: 0.2,
  clipHigh: 0.28,
  dualClipC: 3,
  aggMode,
  lossScaleFactor: 8,
  temperature: T,
  entropyCoeff: 0.01,
  klLoss: { coef: 0.1, kind: 'low_var_kl' },
});

function maxRelDiff(a: tf.NamedTensorMap, b: tf.NamedTensorMap): number {
  let scale = 0;
  let diff = 0;
  for (const [name, ga] of Object.entries(a)) {
    const x = ga.dataSync();
    const y = (b[name] as tf.Tensor).dataSync();
    for (let i = 0; i < x.length; i++) {
      scale = Math.max(scale, Math.abs(x[i] as number));
      diff = Math.max(diff, Math.abs((x[i] as number) - (y[i] as number)));
    }
  }
  return diff / scale;
}

function sumGrads(parts: tf.NamedTensorMap[]): tf.NamedTensorMap {
  const out: tf.NamedTensorMap = {};
  for (const name of Object.keys(parts[0] as tf.NamedTensorMap)) out[name] = tf.addN(parts.map((p) => p[name] as tf.Tensor));
  return out;
}

test.each(MODES)('%s: micro-batch gradients with the shared norm sum to the full-batch gradient', (mode) => {
  const model = Gpt.random(cfg, 8);
  const batch = pgBatch(model);
  const pg = pgOptions(mode);
  const norm = batchLossNorm(batch, pg.lossScaleFactor);
  expect(norm.seqs).toBe(4);
  const full = computeGradients(model, batch, { pg, norm });
  const parts = [rows(batch, 0, 2), rows(batch, 2, 4), rows(batch, 4, 5)].map((b) => computeGradients(model, b, { pg, norm }));
  const summed = sumGrads(parts.map((p) => p.grads));
  expect(maxRelDiff(full.grads, summed)).toBeLessThan(1e-4);
  expect(parts.reduce((a, p) => a + p.loss, 0)).toBeCloseTo(full.loss, 5);
  expect(parts.reduce((a, p) => a + (p.pg?.clipped ?? 0), 0)).toBeCloseTo(full.pg!.clipped, 4);
  expect(full.pg!.clipped).toBeGreaterThan(0);
  expect(full.pg!.clippedLower).toBeGreaterThan(0);

  // Each part normalised by its own tokens or rows is a different objective (so the comparison
  // above can fail); seq-mean-token-sum-norm divides by the rows too (verl ≥ 0.9), so it is no exception.
  const own = [rows(batch, 0, 2), rows(batch, 2, 4), rows(batch, 4, 5)].map((b) => computeGradients(model, b, { pg }));
  const ownSum = sumGrads(own.map((p) => p.grads));
  expect(maxRelDiff(full.grads, ownSum)).toBeGreaterThan(1e-2);

  tf.dispose([...Object.values(full.grads), ...Object.values(summed), ...Object.values(ownSum), ...parts.flatMap((p) => Object.values(p.grads)), ...own.flatMap((p) => Object.values(p.grads))]);
  model.dispose();
});

test.each(MODES)('%s: trainStep with micro-batches reports what the full batch step reports', (mode) => {
  const results = [undefined, 1, 2].map((microBatchRows) => {
    const model = Gpt.random(cfg, 9);
    const batch = pgBatch(model);
    const opt = new Adam(model.params, { lr: 1e-2 });
    const r = trainStep(model, batch, opt, undefined, { pg: pgOptions(mode), ...(microBatchRows ? { microBatchRows } : {}) });
    const w = model.getWeights();
    model.dispose();
    opt.dispose();
    return { r, w };
  });
  const [full, ...others] = results as [(typeof results)[number], ...typeof results];
  expect(full.r.clipFraction).toBeGreaterThan(0);
  for (const o of others) {
    expect(o.r.loss).toBeCloseTo(full.r.loss, 5);
    expect(o.r.pgLoss).toBeCloseTo(full.r.pgLoss!, 5);
    expect(o.r.klLoss).toBeCloseTo(full.r.klLoss!, 5);
    expect(o.r.gradNorm).toBeCloseTo(full.r.gradNorm, 4);
    expect(o.r.clipFraction).toBeCloseTo(full.r.clipFraction!, 6);
    expect(o.r.clipFractionLower).toBeCloseTo(full.r.clipFractionLower!, 6);
    expect(o.r.approxKl).toBeCloseTo(full.r.approxKl!, 5);
    expect(o.r.entropy).toBeCloseTo(full.r.entropy!, 5);
    expect(o.r.tokens).toBe(full.r.tokens);
    expect(maxWeightDiff(full.w, o.w)).toBeLessThan(1e-5);
  }
});

test('no tensors leak across policy-gradient steps with every term on', () => {
  const model = Gpt.random(cfg, 10);
  const opt = new Adam(model.params);
  const batch = pgBatch(model);
  trainStep(model, batch, opt, undefined, { pg: pgOptions('seq-mean-token-mean'), microBatchRows: 2 });
  const n = tf.memory().numTensors;
  trainStep(model, batch, opt, undefined, { pg: pgOptions('token-mean'), microBatchRows: 2 });
  expect(tf.memory().numTensors).toBe(n);
  model.dispose();
  opt.dispose();
});

test.each(MODES)('%s: rows with advantage 0 add nothing to the gradient or the clip count (trainStep skips them)', (mode) => {
  const model = Gpt.random(cfg, 12);
  const batch = pgBatch(model);
  // No entropy or KL term: then a zero-advantage row's loss is identically 0.
  const pg: PgLossOptions = { ...pgOptions(mode), entropyCoeff: 0 };
  delete pg.klLoss;
  const zeroed: TrainBatch = { ...batch, advantages: [1, 0, 0.3, -2, 0] };
  const norm = batchLossNorm(zeroed, pg.lossScaleFactor);
  const all = computeGradients(model, zeroed, { pg, norm });
  const nonzero = [0, 2, 3];
  const pick = <T>(xs: T[]): T[] => nonzero.map((i) => xs[i]!);
  const kept: TrainBatch = {
    tokens: pick(zeroed.tokens),
    lossMask: pick(zeroed.lossMask),
    advantages: pick(zeroed.advantages!),
    oldLogprobs: pick(zeroed.oldLogprobs!),
  };
  const some = computeGradients(model, kept, { pg, norm });
  expect(maxRelDiff(all.grads, some.grads)).toBeLessThan(1e-5);
  expect(some.pg!.clipped).toBeCloseTo(all.pg!.clipped, 5);
  expect(some.loss).toBeCloseTo(all.loss, 6);

  // trainStep (which skips the zero rows) makes the same update as the gradient of every row.
  const opt = new Adam(model.params, { lr: 1e-2 });
  const before = model.getWeights();
  const r = trainStep(model, zeroed, opt, undefined, { pg });
  const ref = Gpt.fromWeights(cfg, before);
  const refOpt = new Adam(ref.params, { lr: 1e-2 });
  const gradNorm = refOpt.apply(all.grads);
  expect(r.gradNorm).toBeCloseTo(gradNorm, 5);
  for (const [name, w] of Object.entries(model.getWeights())) {
    const other = ref.getWeights()[name] as Float32Array;
    let maxDiff = 0;
    for (let i = 0; i < w.length; i++) maxDiff = Math.max(maxDiff, Math.abs((w[i] as number) - (other[i] as number)));
    expect(maxDiff).toBeLessThan(1e-6);
  }
  tf.dispose([...Object.values(all.grads), ...Object.values(some.grads)]);
  [model, ref].forEach((m) => m.dispose());
  [opt, refOpt].forEach((o) => o.dispose());
});

describe('per-token advantages (tree credit)', () => {
  it('equal to each row\'s advantage on every token, give the row-advantage loss and gradient exactly', () => {
    const model = Gpt.random(cfg, 9);
    const batch = pgBatch(model);
    const perToken: TrainBatch = { ...batch, tokenAdvantages: batch.tokens.map((row, r) => row.map(() => batch.advantages![r]!)) };
    const a = computeGradients(model, batch, { pg: pgOptions('token-mean') });
    const b = computeGradients(model, perToken, { pg: pgOptions('token-mean') });
    expect(b.loss).toBeCloseTo(a.loss, 6);
    expect(maxRelDiff(a.grads, b.grads)).toBeLessThan(1e-5);
    tf.dispose([...Object.values(a.grads), ...Object.values(b.grads)]);
  });

  it('weight each token by its own advantage: zero on one segment removes exactly that segment\'s gradient', () => {
    const model = Gpt.random(cfg, 10);
    const base = pgBatch(model);
    const batch: TrainBatch = { ...base, tokens: [base.tokens[0]!], lossMask: [base.lossMask[0]!], advantages: [1], oldLogprobs: [base.oldLogprobs![0]!], refLogprobs: [base.refLogprobs![0]!] };
    const pg = { ...pgOptions('seq-mean-token-sum'), entropyCoeff: 0, klLoss: undefined };
    // Row 0 trains tokens 2..6: credit tokens 2..3 with 1 and 4..6 with 0 ...
    const split: TrainBatch = { ...batch, tokenAdvantages: [batch.tokens[0]!.map((_, t) => (t <= 3 ? 1 : 0))] };
    // ... which is the same as masking 4..6 out of the loss (the denominators held equal).
    const masked: TrainBatch = { ...batch, lossMask: [batch.lossMask[0]!.map((m, t) => (t <= 3 ? m : 0))] };
    const norm = batchLossNorm(batch, pg.lossScaleFactor);
    const a = computeGradients(model, split, { pg, norm });
    const b = computeGradients(model, masked, { pg, norm });
    const full = computeGradients(model, batch, { pg, norm });
    expect(maxRelDiff(b.grads, a.grads)).toBeLessThan(1e-5);
    expect(maxRelDiff(full.grads, a.grads)).toBeGreaterThan(1e-2);
    tf.dispose([...Object.values(a.grads), ...Object.values(b.grads), ...Object.values(full.grads)]);
  });
});
