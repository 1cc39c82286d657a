/**
 * Logprobs under the sampling temperature: the engine records log softmax(logits / T) of the
 * token it drew, and the trainer computes the same from logits / T, so the PPO ratio compares
 * like with like (verl divides the actor's logits by the rollout temperature).
 */
import type { GptConfig } from '../../src/model/arch';
import type { SamplingParams } from '../../src/domain/types';
import { GenerationRow } from '../../src/engine/generation-row';
import { OrtEngine } from '../../src/engine/ort-engine';
import { SamplerScratch, logprobTemperature, tokenLogprob } from '../../src/engine/sampling';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { exportOnnx } from '../../src/model/onnx-export';
import { sequenceLogprobs } from '../../src/rl/trainer';
import { sharpWeights, tfLogits } from '../model/helpers';
import { CharTokenizer } from '../engine/char-tokenizer';

beforeAll(async () => {
  await initTfBackend();
});

/** log softmax(logits / T)[token] in float64, written out. */
function handLogprob(logits: ArrayLike<number>, token: number, T: number): number {
  const xs = Array.from(logits, (x) => x / T);
  const max = Math.max(...xs);
  const lse = max + Math.log(xs.reduce((a, x) => a + Math.exp(x - max), 0));
  return (xs[token] as number) - lse;
}

describe('tokenLogprob', () => {
  const logits = Float32Array.from([2, 1, 0, -1]);

  it('is log softmax(logits / T) of the token', () => {
    // T 0.5: scaled 4 2 0 -2; log(e^4 + e^2 + 1 + e^-2) = log 63.1225 = 4.1450779; token 1: 2 - 4.1450779
    expect(tokenLogprob(logits, 0, 4, 1, 0.5)).toBeCloseTo(-2.1450779389608, 6);
  });

  it('greedy (T = 0) uses the temperature-1 distribution', () => {
    // log(e^2 + e + 1 + e^-1) = log 11.475217 = 2.4401897; token 1: 1 - 2.4401897
    expect(logprobTemperature(0)).toBe(1);
    expect(tokenLogprob(logits, 0, 4, 1, 0)).toBeCloseTo(-1.4401896985612, 6);
    expect(tokenLogprob(logits, 0, 4, 1, 1)).toBeCloseTo(-1.4401896985612, 6);
  });

  it('reads one row of a [b, V] buffer at its offset', () => {
    const buf = Float32Array.from([9, 9, 9, 2, 1, 0, -1]);
    expect(tokenLogprob(buf, 3, 4, 1, 0.5)).toBeCloseTo(-2.1450779389608, 6);
  });
});

test('GenerationRow records the logprob of the tempered distribution it sampled from, ignoring top-p', () => {
  const tok = new CharTokenizer('abcd');
  const V = tok.vocabSize;
  const logits = Float32Array.from([-5, -5, 2, 1, 0, -1]);
  const params: SamplingParams = { maxNewTokens: 4, temperature: 0.7, topP: 0.5, stop: [] };
  // rand 0 draws the most likely token (id 2).
  const row = new GenerationRow(tok.encode('a'), () => 0);
  row.accept(logits, 0, params, tok, 64, new SamplerScratch(V));
  expect(row.tokenIds).toEqual([2]);
  expect(row.logprobs[0]).toBeCloseTo(handLogprob(logits, 2, 0.7), 6);
  // Top-p 0.5 keeps only token 2, whose truncated logprob would be 0: the record is untruncated.
  expect(row.logprobs[0]).toBeLessThan(-0.1);
});

describe('trainer logprobs at temperature T', () => {
  const cfg: GptConfig = { vocabSize: 12, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };

  it('equal log softmax(logits / T) of the model’s logits, computed by hand', () => {
    const model = Gpt.fromWeights(cfg, sharpWeights(cfg, 4, 4));
    const seq = [3, 7, 1, 9, 4, 4, 10];
    const n = seq.length;
    const logits = tfLogits(model, [seq], [seq.map((_, i) => i)], [seq.map(() => 1)]);
    for (const T of [0.7, 1, 1.5]) {
      const lp = sequenceLogprobs(model, [seq], 32, T)[0] as number[];
      expect(lp[0]).toBe(0);
      for (let t = 1; t < n; t++) {
        const row = logits.subarray((t - 1) * cfg.vocabSize, t * cfg.vocabSize);
        expect(Math.abs((lp[t] as number) - handLogprob(row, seq[t] as number, T))).toBeLessThan(1e-5);
      }
    }
    model.dispose();
  });
});

test('the ONNX engine’s recorded logprobs at temperature 0.7 equal the trainer’s on the same tokens', async () => {
  const tok = new CharTokenizer('0123456789+= abcdefgh');
  const cfg: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 32, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };
  const weights = sharpWeights(cfg, 5, 4);
  const engine = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer: tok, weightVersion: 1, threads: 1 });
  const model = Gpt.fromWeights(cfg, weights);
  try {
    const params: SamplingParams = { maxNewTokens: 10, temperature: 0.7, topP: 0.9, stop: [], seed: 3 };
    const completions = await engine.generate(['12+7=', 'abc', 'h'], params);
    let compared = 0;
    let maxGapToT1 = 0;
    for (const c of completions) {
      const seq = [...c.promptTokenIds, ...c.tokenIds];
      const atT = (sequenceLogprobs(model, [seq], 32, 0.7)[0] as number[]).slice(c.promptTokenIds.length);
      const atOne = (sequenceLogprobs(model, [seq], 32, 1)[0] as number[]).slice(c.promptTokenIds.length);
      c.logprobs.forEach((lp, t) => {
        expect(Math.abs(lp - (atT[t] as number))).toBeLessThan(1e-4);
        maxGapToT1 = Math.max(maxGapToT1, Math.abs(lp - (atOne[t] as number)));
        compared++;
      });
    }
    expect(compared).toBeGreaterThan(10);
    // The test can tell temperatures apart: temperature-1 logprobs are far off.
    expect(maxGapToT1).toBeGreaterThan(0.05);
  } finally {
    model.dispose();
    await engine.release();
  }
});
