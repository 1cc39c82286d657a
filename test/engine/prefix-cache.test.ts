/**
 * The engine's prefix KV cache: a prompt that extends (or shares a start with) a sequence the engine
 * already ran reuses those positions, and generates exactly what an engine without the cache does.
 */
import type { SamplingParams } from '../../src/domain/types';
import { OrtEngine } from '../../src/engine/ort-engine';
import { PrefixKvCache } from '../../src/engine/prefix-cache';
import type { GptConfig } from '../../src/model/arch';
import { initTfBackend } from '../../src/model/backend';
import { exportOnnx } from '../../src/model/onnx-export';
import { withLogitBias } from '../../src/model/logit-bias';
import { sharpWeights } from '../model/helpers';
import { CharTokenizer } from './char-tokenizer';

const tok = new CharTokenizer('0123456789+-=:<>/ abcdefghijklmnopqrstuvwxyz');
const cfg: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 64, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };
const weights = withLogitBias(cfg, sharpWeights(cfg, 11, 6), { [tok.eosId]: -50 });
let cached: OrtEngine;
let plain: OrtEngine;

beforeAll(async () => {
  await initTfBackend();
  const onnx = exportOnnx(cfg, weights);
  cached = await OrtEngine.create({ onnx, config: cfg, tokenizer: tok, weightVersion: 1, threads: 1, prefixCacheBytes: 8 << 20 });
  plain = await OrtEngine.create({ onnx, config: cfg, tokenizer: tok, weightVersion: 1, threads: 1 });
});

afterAll(async () => {
  await cached.release();
  await plain.release();
});

function expectSame(a: Awaited<ReturnType<OrtEngine['generate']>>, b: typeof a): void {
  a.forEach((c, i) => {
    expect(c.tokenIds).toEqual(b[i]!.tokenIds);
    c.logprobs.forEach((lp, t) => expect(Math.abs(lp - b[i]!.logprobs[t]!)).toBeLessThan(1e-4));
  });
}

test('a branch continuing from a finished sequence reuses its positions and generates what a cold engine does', async () => {
  const greedy: SamplingParams = { maxNewTokens: 8, temperature: 0, topP: 1, stop: [] };
  const [first] = await cached.generate(['12+7='], greedy);
  expect(first!.cachedPromptTokens).toBe(0);
  // The parent's context (prompt + its output) plus tool text, and two siblings sharing the prompt.
  const branch = `12+7=${tok.decode(first!.tokenIds)}<res>`;
  const prompts = [branch, branch, '12+9=', 'abc'];
  const sampled: SamplingParams = { maxNewTokens: 10, temperature: 1, topP: 1, stop: [] };
  const seeds = [5, 6, 7, 8];
  const withCache = await cached.generate(prompts, sampled, { seeds });
  const cold = await plain.generate(prompts, sampled, { seeds });
  expectSame(withCache, cold);
  // 5 + 8 - 1 fed positions of the first request: the branch reuses all of them; '12+9=' shares '12+'.
  expect(withCache.map((c) => c.cachedPromptTokens)).toEqual([12, 12, 3, 0]);
  const stats = cached.prefixCacheStats()!;
  expect(stats).toMatchObject({ lookups: 5, hits: 3 });
  expect(stats.reusedTokens).toBe(12 + 12 + 3);
  expect(plain.prefixCacheStats()).toBeUndefined();
});

test('greedy decoding over many cached prefixes matches the cold engine token for token', async () => {
  const greedy: SamplingParams = { maxNewTokens: 6, temperature: 0, topP: 1, stop: [] };
  let context = 'x: 3+45';
  for (let turn = 0; turn < 4; turn++) {
    const prompts = [context, `${context}+1`, `${context}-2=`];
    const a = await cached.generate(prompts, greedy);
    expectSame(a, await plain.generate(prompts, greedy));
    context = `${context}${tok.decode(a[0]!.tokenIds)}/`;
  }
  expect(cached.prefixCacheStats()!.hits).toBeGreaterThan(8);
});

test('the cache stays within its byte budget, evicting the least recently used entries', () => {
  const heads = 2;
  const hd = 4;
  const perToken = 2 * heads * hd * 4; // two tensors (one layer), float32
  const cache = new PrefixKvCache(heads, hd, 10 * perToken);
  const T = 8;
  const past = [new Float32Array(heads * T * hd).map((_, i) => i), new Float32Array(heads * T * hd).map((_, i) => -i)];
  cache.store([1, 2, 3, 4], past, 0, T, [0, 1, 2, 3]);
  cache.store([5, 6, 7, 8], past, 0, T, [4, 5, 6, 7]);
  expect(cache.stats()).toMatchObject({ entries: 2, bytes: 8 * perToken, evictions: 0 });
  expect(cache.lookup([1, 2, 9], 2)?.length).toBe(2); // touches [1,2,3,4]
  cache.store([9, 9, 9], past, 0, T, [0, 1, 2]); // 11 tokens > 10: evicts [5,6,7,8], the least recent
  expect(cache.stats()).toMatchObject({ entries: 2, bytes: 7 * perToken, evictions: 1 });
  expect(cache.lookup([5, 6], 2)).toBeUndefined();
  // Copied back, position j of head h is the stored column's vector.
  const out = [new Float32Array(heads * 4 * hd), new Float32Array(heads * 4 * hd)];
  cache.copyInto(cache.lookup([1, 2, 3, 4, 5], 4)!, out, 0, 4, 0);
  expect(Array.from(out[0]!.subarray(hd, 2 * hd))).toEqual(Array.from(past[0]!.subarray(hd, 2 * hd)));
  expect(Array.from(out[1]!.subarray((4 + 2) * hd, (4 + 3) * hd))).toEqual(Array.from(past[1]!.subarray((T + 2) * hd, (T + 3) * hd)));
});
