import { GenerationRow } from '../../src/engine/generation-row';
import { KvPingPong } from '../../src/engine/kv-cache';
import { SamplerScratch, argmax, finishReason, sampleToken, tokenStats } from '../../src/engine/sampling';
import type { SamplingParams } from '../../src/domain/types';
import { mixSeed, mulberry32 } from '../../src/domain/rng';
import { CharTokenizer } from './char-tokenizer';

const logitsOf = (p: number[]): Float32Array => Float32Array.from(p.map((x) => Math.log(x) + 3));

test('tokenStats: logZ and normalised entropy', () => {
  const l = Float32Array.from([0.5, -1, 2, 0]);
  const z = Math.log(l.reduce((a, x) => a + Math.exp(x), 0));
  const s = tokenStats(l, 0, 4);
  expect(s.logZ).toBeCloseTo(z, 6);
  const p = [...l].map((x) => Math.exp(x - z));
  expect(s.entropy).toBeCloseTo(-p.reduce((a, x) => a + x * Math.log(x), 0) / Math.log(4), 6);
  expect(tokenStats(new Float32Array(8), 0, 8).entropy).toBeCloseTo(1, 6);
  expect(tokenStats(Float32Array.from([0, 0, 60, 0]), 0, 4).entropy).toBeLessThan(1e-6);
  // Offsets address one row of a [b, V] buffer.
  expect(tokenStats(Float32Array.from([9, 9, 0.5, -1, 2, 0]), 2, 4).logZ).toBeCloseTo(z, 6);
});

test('greedy picks the argmax regardless of topP', () => {
  const l = Float32Array.from([0, 3, 1, 3.5, -2]);
  expect(argmax(l, 0, 5)).toBe(3);
  expect(sampleToken(l, 0, 5, 0, 0.1, () => 0.99)).toBe(3);
});

function histogram(l: Float32Array, temperature: number, topP: number, draws: number): number[] {
  const rand = mulberry32(42);
  const scratch = new SamplerScratch(l.length);
  const h = new Array<number>(l.length).fill(0);
  for (let i = 0; i < draws; i++) (h[sampleToken(l, 0, l.length, temperature, topP, rand, scratch)] as number)++;
  return h.map((c) => c / draws);
}

test('temperature 1 samples the softmax distribution', () => {
  const freq = histogram(logitsOf([0.4, 0.3, 0.2, 0.1]), 1, 1, 20000);
  [0.4, 0.3, 0.2, 0.1].forEach((p, i) => expect(Math.abs((freq[i] as number) - p)).toBeLessThan(0.015));
});

test('temperature sharpens and flattens', () => {
  const l = logitsOf([0.4, 0.3, 0.2, 0.1]);
  expect(histogram(l, 0.25, 1, 5000)[0]).toBeGreaterThan(0.6);
  expect(histogram(l, 10, 1, 5000)[3]).toBeGreaterThan(0.2);
});

test('top-p keeps the smallest nucleus reaching p and renormalises it', () => {
  const l = logitsOf([0.1, 0.4, 0.2, 0.3]);
  const freq = histogram(l, 1, 0.6, 20000);
  expect(freq[0]).toBe(0);
  expect(freq[2]).toBe(0);
  expect(Math.abs((freq[1] as number) - 4 / 7)).toBeLessThan(0.02);
  expect(histogram(l, 1, 0, 200)[1]).toBe(1);
  expect(histogram(l, 1, 0.4, 200)[1]).toBe(1);
});

test('seeded streams are reproducible and distinct per row', () => {
  const a = mulberry32(mixSeed(7, 0));
  const b = mulberry32(mixSeed(7, 0));
  const c = mulberry32(mixSeed(7, 1));
  const xs = [a(), a(), a()];
  expect([b(), b(), b()]).toEqual(xs);
  expect([c(), c(), c()]).not.toEqual(xs);
  expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
});

test('finishReason precedence: eos, then stop, then length', () => {
  const base = { eosId: 1, generated: 3, maxNewTokens: 10, totalLength: 8, maxSeq: 16, stops: ['!'] };
  expect(finishReason({ ...base, token: 5, text: 'ab' })).toBeUndefined();
  expect(finishReason({ ...base, token: 1, text: 'a!', generated: 10 })).toBe('eos');
  expect(finishReason({ ...base, token: 5, text: 'a!', generated: 10 })).toBe('stop');
  expect(finishReason({ ...base, token: 5, text: 'ab', generated: 10 })).toBe('length');
  expect(finishReason({ ...base, token: 5, text: 'ab', totalLength: 16 })).toBe('length');
  expect(finishReason({ ...base, token: 5, stops: [''], text: 'ab' })).toBeUndefined();
});

test('KvPingPong: past/next alternate and keepRows compacts the current set', () => {
  // 1 tensor, 1 head, headDim 1: each row is T consecutive floats.
  const kv = new KvPingPong(1, 1, 1, 3, 4);
  (kv.next(3, 2)[0] as Float32Array).set([10, 11, 20, 21, 30, 31]);
  kv.swap();
  expect([...(kv.past(3, 2)[0] as Float32Array)]).toEqual([10, 11, 20, 21, 30, 31]);
  kv.keepRows([0, 2], 2);
  expect([...(kv.past(2, 2)[0] as Float32Array)]).toEqual([10, 11, 30, 31]);
  // The other set is untouched and is where the next present goes.
  expect(kv.next(2, 3)[0]).toHaveLength(6);
});

describe('GenerationRow', () => {
  const tok = new CharTokenizer('abc<>/ ');
  const V = tok.vocabSize;
  const params: SamplingParams = { maxNewTokens: 10, temperature: 0, topP: 1, stop: ['</'] };
  const peaked = (id: number): Float32Array => {
    const l = new Float32Array(V);
    l[id] = 20;
    return l;
  };

  test('stops after the token that completes a stop string, text keeps it', () => {
    const row = new GenerationRow(tok.encode('a'), () => 0.5);
    const scratch = new SamplerScratch(V);
    for (const ch of 'b</c') {
      if (row.finish) break;
      row.accept(peaked(tok.encode(ch)[0] as number), 0, params, tok, 64, scratch);
    }
    const c = row.toCompletion(tok);
    expect(c.finishReason).toBe('stop');
    expect(c.text).toBe('b</');
    expect(c.tokenIds).toEqual(tok.encode('b</'));
    expect(c.logprobs.every((x) => x > -1e-6 && x <= 0)).toBe(true);
    expect(c.entropy.every((x) => x >= 0 && x < 1e-3)).toBe(true);
  });

  test('eos id is kept in tokenIds but not in text', () => {
    const row = new GenerationRow(tok.encode('a'), () => 0.5);
    const scratch = new SamplerScratch(V);
    row.accept(peaked(tok.encode('c')[0] as number), 0, params, tok, 64, scratch);
    row.accept(peaked(tok.eosId), 0, params, tok, 64, scratch);
    const c = row.toCompletion(tok);
    expect(c.finishReason).toBe('eos');
    expect(c.text).toBe('c');
    expect(c.tokenIds).toEqual([...tok.encode('c'), tok.eosId]);
    expect(c.logprobs).toHaveLength(2);
  });

  test('maxSeq caps prompt plus generation', () => {
    const row = new GenerationRow(tok.encode('abc'), () => 0.5);
    const scratch = new SamplerScratch(V);
    row.accept(peaked(2), 0, { ...params, stop: [] }, tok, 5, scratch);
    expect(row.finish).toBeUndefined();
    row.accept(peaked(2), 0, { ...params, stop: [] }, tok, 5, scratch);
    expect(row.finish).toBe('length');
    expect(row.length).toBe(5);
  });
});
