import type { GptConfig } from '../../src/model/arch';
import { Adam } from '../../src/model/adam';
import { initTfBackend } from '../../src/model/backend';
import { decodeCheckpoint, encodeCheckpoint } from '../../src/model/checkpoint';
import { Gpt } from '../../src/model/gpt';
import { initWeights } from '../../src/model/init';
import { trainStep } from '../../src/rl/trainer';

const cfg: GptConfig = { vocabSize: 20, maxSeq: 12, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const batch = (k: number): { tokens: number[][]; lossMask: number[][] } => ({
  tokens: [[1, 2, 3, 4 + k, 5], [6, 7, 8 + k]],
  lossMask: [[0, 1, 1, 1, 1], [0, 1, 1]],
});

beforeAll(async () => {
  await initTfBackend();
});

test('init is deterministic per seed', () => {
  expect(initWeights(cfg, 3)).toEqual(initWeights(cfg, 3));
  expect(initWeights(cfg, 3).wte).not.toEqual(initWeights(cfg, 4).wte);
});

test('weights-only round trip, deterministic bytes', () => {
  const weights = initWeights(cfg, 1);
  const bytes = encodeCheckpoint({ config: cfg, weights, step: 7 });
  const again = encodeCheckpoint({ config: { ...cfg }, weights: initWeights(cfg, 1), step: 7 });
  expect(Buffer.from(bytes).equals(Buffer.from(again))).toBe(true);
  const back = decodeCheckpoint(bytes);
  expect(back.step).toBe(7);
  expect(back.config).toEqual(cfg);
  expect(back.weights).toEqual(weights);
  expect(back.optimizer).toBeUndefined();
});

test('decoding works from an unaligned view and rejects truncation', () => {
  const bytes = encodeCheckpoint({ config: cfg, weights: initWeights(cfg, 2), step: 1 });
  const shifted = new Uint8Array(bytes.length + 1);
  shifted.set(bytes, 1);
  expect(decodeCheckpoint(shifted.subarray(1)).weights).toEqual(initWeights(cfg, 2));
  expect(() => decodeCheckpoint(bytes.subarray(0, bytes.length - 4))).toThrow(/truncated/);
});

test('decoding works from a Node Buffer, whose slice is a view (as fs.readFileSync returns)', () => {
  const bytes = encodeCheckpoint({ config: cfg, weights: initWeights(cfg, 3), step: 2 });
  const pool = Buffer.alloc(bytes.length + 16);
  pool.set(bytes, 16);
  expect(decodeCheckpoint(pool.subarray(16)).weights).toEqual(initWeights(cfg, 3));
  expect(decodeCheckpoint(Buffer.from(bytes)).weights).toEqual(initWeights(cfg, 3));
});

test('resuming from a checkpoint continues training bit-for-bit', () => {
  const a = Gpt.random(cfg, 9);
  const optA = new Adam(a.params, { lr: 1e-2, weightDecay: 0.01 });
  trainStep(a, batch(0), optA);
  trainStep(a, batch(1), optA);
  const bytes = encodeCheckpoint({ config: a.config, weights: a.getWeights(), optimizer: optA.getState(), step: 2 });

  const ck = decodeCheckpoint(bytes);
  expect(ck.optimizer?.step).toBe(2);
  const b = Gpt.fromWeights(ck.config, ck.weights);
  const optB = new Adam(b.params);
  optB.setState(ck.optimizer as NonNullable<typeof ck.optimizer>);
  expect(optB.config.weightDecay).toBe(0.01);

  const ra = trainStep(a, batch(2), optA);
  const rb = trainStep(b, batch(2), optB);
  expect(rb.loss).toBe(ra.loss);
  expect(b.getWeights()).toEqual(a.getWeights());
  for (const x of [a, b]) x.dispose();
  optA.dispose();
  optB.dispose();
});
