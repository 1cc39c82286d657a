import type { GptConfig } from '../../src/model/arch';
import type { SamplingParams } from '../../src/domain/types';
import { OrtEngine } from '../../src/engine/ort-engine';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { exportOnnx } from '../../src/model/onnx-export';
import { sequenceLogprobs } from '../../src/rl/trainer';
import { withLogitBias } from '../../src/model/logit-bias';
import { sharpWeights } from '../model/helpers';
import { CharTokenizer } from './char-tokenizer';

const tok = new CharTokenizer('0123456789+-=:<>/ abcdefghijklmnopqrstuvwxyz');
const cfg: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 40, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };
// No EOS from random weights: tests below control finishing explicitly.
const weights = withLogitBias(cfg, sharpWeights(cfg, 11, 6), { [tok.eosId]: -50 });
const greedy: SamplingParams = { maxNewTokens: 12, temperature: 0, topP: 1, stop: [] };
const prompts = ['12+7=', 'abc', 'x: 3+45+6=', 'q'];
let engine: OrtEngine;

beforeAll(async () => {
  await initTfBackend();
  engine = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer: tok, weightVersion: 5, threads: 1 });
});

afterAll(async () => {
  await engine.release();
});

test('KV-cache decoding equals full recomputation on a left-padded batch', async () => {
  const cached = await engine.generate(prompts, greedy);
  const full = await engine.generate(prompts, greedy, { kvCache: false });
  expect(engine.weightVersion).toBe(5);
  cached.forEach((c, i) => {
    const f = full[i] as (typeof full)[number];
    expect(c.tokenIds).toEqual(f.tokenIds);
    expect(c.tokenIds).toHaveLength(12);
    expect(c.finishReason).toBe('length');
    expect(c.promptTokenIds).toEqual(tok.encode(prompts[i] as string));
    c.logprobs.forEach((lp, t) => expect(Math.abs(lp - (f.logprobs[t] as number))).toBeLessThan(1e-4));
    c.entropy.forEach((e, t) => expect(Math.abs(e - (f.entropy[t] as number))).toBeLessThan(1e-4));
  });
  // Sharp weights: a non-trivial output, not one repeated token.
  expect(new Set(cached.flatMap((c) => c.tokenIds)).size).toBeGreaterThan(3);
});

test('batching does not change results, and logprobs match the tfjs model', async () => {
  const batched = await engine.generate(prompts, greedy);
  const model = Gpt.fromWeights(cfg, weights);
  for (let i = 0; i < prompts.length; i++) {
    const [alone] = await engine.generate([prompts[i] as string], greedy);
    const b = batched[i] as NonNullable<typeof alone>;
    expect(alone?.tokenIds).toEqual(b.tokenIds);
    const seq = [...b.promptTokenIds, ...b.tokenIds];
    const ref = (sequenceLogprobs(model, [seq])[0] as number[]).slice(b.promptTokenIds.length);
    ref.forEach((lp, t) => expect(Math.abs(lp - (b.logprobs[t] as number))).toBeLessThan(1e-4));
  }
  model.dispose();
});

test('seeded sampling is reproducible; rows finishing early do not disturb the rest', async () => {
  const params: SamplingParams = { maxNewTokens: 10, temperature: 1, topP: 0.9, stop: [], seed: 3 };
  const a = await engine.generate(prompts, params);
  const b = await engine.generate(prompts, params);
  expect(a.map((c) => c.tokenIds)).toEqual(b.map((c) => c.tokenIds));
  const c = await engine.generate(prompts, { ...params, seed: 4 });
  expect(c.map((x) => x.tokenIds)).not.toEqual(a.map((x) => x.tokenIds));
  const full = await engine.generate(prompts, params, { kvCache: false });
  expect(full.map((x) => x.tokenIds)).toEqual(a.map((x) => x.tokenIds));
  // A stop string that some rows hit early: the cache is compacted, survivors must be unaffected.
  // Chosen from the outputs themselves: a character some rows write and others do not.
  const texts = a.map((x) => x.text);
  const stop = [...new Set(texts.join(''))].find((ch) => texts.some((t) => t.includes(ch)) && texts.some((t) => !t.includes(ch)));
  if (stop === undefined) throw new Error('no character tells these outputs apart');
  const withStop = { ...params, stop: [stop] };
  const cachedStop = await engine.generate(prompts, withStop);
  const fullStop = await engine.generate(prompts, withStop, { kvCache: false });
  expect(cachedStop.map((x) => x.tokenIds)).toEqual(fullStop.map((x) => x.tokenIds));
  const reasons = cachedStop.map((x) => x.finishReason);
  expect(reasons).toContain('stop');
  expect(reasons).toContain('length');
  cachedStop.forEach((x, i) => {
    const prefix = (a[i] as (typeof a)[number]).tokenIds.slice(0, x.tokenIds.length);
    expect(x.tokenIds).toEqual(prefix);
  });
});

test('stop strings end a row at the token that completes them', async () => {
  const [ref] = await engine.generate(['abc'], greedy);
  const text = ref?.text as string;
  const stop = text.slice(3, 5);
  const firstEnd = text.indexOf(stop) + stop.length;
  const [got] = await engine.generate(['abc'], { ...greedy, stop: ['not-there', stop] });
  expect(got?.finishReason).toBe('stop');
  expect(got?.text).toBe(text.slice(0, firstEnd));
  expect(got?.tokenIds).toEqual(ref?.tokenIds.slice(0, firstEnd));
});

test('eos finishes a row; eos id kept, text without it', async () => {
  const w = withLogitBias(cfg, sharpWeights(cfg, 11, 6), { [tok.eosId]: 100 });
  const e = await OrtEngine.create({ onnx: exportOnnx(cfg, w), config: cfg, tokenizer: tok, weightVersion: 0, threads: 1 });
  const out = await e.generate(['ab', 'c'], greedy);
  for (const c of out) {
    expect(c.finishReason).toBe('eos');
    expect(c.tokenIds).toEqual([tok.eosId]);
    expect(c.text).toBe('');
    expect(c.logprobs[0]).toBeCloseTo(0, 4);
  }
  await e.release();
});

test('sequences reaching maxSeq end with length; over-long prompts do not crash', async () => {
  const long = 'a'.repeat(cfg.maxSeq - 3);
  const params = { ...greedy, maxNewTokens: 50 };
  const out = await engine.generate([long, 'b'.repeat(cfg.maxSeq + 5), '1+1='], params);
  expect(out[0]?.finishReason).toBe('length');
  expect(out[0]?.tokenIds).toHaveLength(3);
  expect(out[1]?.finishReason).toBe('length');
  expect(out[1]?.tokenIds).toHaveLength(0);
  expect(out[2]?.tokenIds).toHaveLength(cfg.maxSeq - 4);
  const steps: number[] = [];
  await engine.generate(['1+1='], { ...greedy, maxNewTokens: 4 }, { onStep: (s) => steps.push(s) });
  expect(steps).toEqual([0, 1, 2, 3]);
});

test('a seeded request samples the same tokens alone or in any batch (BatchingEngine)', async () => {
  const { BatchingEngine } = await import('../../src/engine/batcher');
  const batcher = new BatchingEngine(engine, 16);
  const params = (seed: number): SamplingParams => ({ maxNewTokens: 10, temperature: 1, topP: 1, stop: [], seed });
  const together = await Promise.all(prompts.map((p, i) => batcher.complete(p, params(100 + i))));
  const reversed = await Promise.all([...prompts].reverse().map((p, j) => batcher.complete(p, params(100 + prompts.length - 1 - j))));
  for (let i = 0; i < prompts.length; i++) {
    const alone = await batcher.complete(prompts[i] as string, params(100 + i));
    expect(together[i]!.tokenIds).toEqual(alone.tokenIds);
    expect(reversed[prompts.length - 1 - i]!.tokenIds).toEqual(alone.tokenIds);
  }
  // Different seeds in one batch really sample differently.
  expect(new Set(together.map((c) => c.tokenIds.join(','))).size).toBeGreaterThan(1);
  expect(batcher.batchSizes.slice(0, 2)).toEqual([prompts.length, prompts.length]);
});

test('one bad request in a batch fails alone: the others of its batch are served (BatchingEngine)', async () => {
  const { BatchingEngine } = await import('../../src/engine/batcher');
  const batcher = new BatchingEngine(engine, 16);
  const params: SamplingParams = { maxNewTokens: 6, temperature: 1, topP: 1, stop: [], seed: 9 };
  // An empty prompt encodes to no tokens: the engine rejects it (it used to reject its whole batch).
  const results = await Promise.allSettled([...prompts, '', ...prompts].map((p) => batcher.complete(p, params)));
  const rejected = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
  expect(rejected).toEqual([prompts.length]);
  expect(String((results[prompts.length] as PromiseRejectedResult).reason)).toMatch(/encodes to no tokens/);
  // The others got exactly what they get alone.
  const alone = await batcher.complete(prompts[0]!, params);
  expect((results[0] as PromiseFulfilledResult<{ tokenIds: number[] }>).value.tokenIds).toEqual(alone.tokenIds);
});
