import type { GptConfig } from '../../src/model/arch';
import type { SamplingParams } from '../../src/domain/types';
import { OrtEngine } from '../../src/engine/ort-engine';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { withLogitBias } from '../../src/model/logit-bias';
import { sharpWeights } from '../model/helpers';

/** End to end with the project's byte-level BPE tokenizer (multi-character tokens, special EOS). */
const tok = loadTokenizer();
const cfg: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 64, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };
const weights = withLogitBias(cfg, sharpWeights(cfg, 21, 6), { [tok.eosId]: -50 });
const prompts = ['Compute: 17+25+8+31\n', 'Evaluate: 17+25\n'];
const greedy: SamplingParams = { maxNewTokens: 24, temperature: 0, topP: 1, stop: [] };
let engine: OrtEngine;

beforeAll(async () => {
  engine = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer: tok, weightVersion: 1 });
});

afterAll(async () => {
  await engine.release();
});

test('prompt ids, text and token ids agree with the tokenizer', async () => {
  const out = await engine.generate(prompts, greedy);
  out.forEach((c, i) => {
    expect(c.promptTokenIds).toEqual(tok.encode(prompts[i] as string));
    expect(c.text).toBe(tok.decode(c.tokenIds));
    expect(c.tokenIds).toHaveLength(24);
    expect(c.entropy.every((e) => e >= 0 && e <= 1)).toBe(true);
    expect(c.logprobs.every((l) => l <= 0)).toBe(true);
  });
});

test('a stop string spanning tokens ends generation at the first token that completes it', async () => {
  const [ref] = await engine.generate([prompts[0] as string], greedy);
  const ids = ref?.tokenIds as number[];
  const text = ref?.text as string;
  const stop = text.slice(Math.floor(text.length / 2), Math.floor(text.length / 2) + 3);
  let k = 1;
  while (!tok.decode(ids.slice(0, k)).includes(stop)) k++;
  const [got] = await engine.generate([prompts[0] as string], { ...greedy, stop: [stop] });
  expect(got?.finishReason).toBe('stop');
  expect(got?.tokenIds).toEqual(ids.slice(0, k));
  expect(got?.text.includes(stop)).toBe(true);
});
