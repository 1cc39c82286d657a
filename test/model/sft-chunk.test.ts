/** An SFT chunk under a trained-token budget (compare.sftBudget rl-trained-tokens) stops at the step that reaches it. */
import type { GptConfig } from '../../src/model/arch';
import { initTfBackend } from '../../src/model/backend';
import { initWeights } from '../../src/model/init';
import { trainedTokensOf } from '../../src/rl/trainer';
import { runSftChunk, sampleSftBatch, type SftExample, type SftOptions } from '../../src/sft/sft';

const cfg: GptConfig = { vocabSize: 20, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32, maxSeq: 16 };
const sft: SftOptions = { steps: 10, batchSize: 3, learningRate: 1e-3, warmupSteps: 0, gradClip: 1 };
// Prompts of different lengths; each example trains its last 4 tokens.
const examples: SftExample[] = [3, 5, 8].map((prompt) => ({
  role: 'actor',
  tokens: Array.from({ length: prompt + 4 }, (_, i) => 1 + ((i * 7) % 19)),
  lossMask: Array.from({ length: prompt + 4 }, (_, i) => (i >= prompt ? 1 : 0)),
}));

beforeAll(async () => {
  await initTfBackend();
});

test('trains until the budget is reached, the reaching step included, and counts the loss-masked tokens', async () => {
  const ckpt = { config: cfg, weights: initWeights(cfg, 1), step: 0 };
  const perStep = [1, 2, 3, 4].map((step) => trainedTokensOf(sampleSftBatch(examples, sft.batchSize, 5, step)));
  expect(perStep.every((n) => n === 12)).toBe(true); // 4 trained tokens per example, 3 examples a batch.
  const capped = await runSftChunk(ckpt, examples, 10, sft, 5, () => {}, perStep[0]! + 1);
  expect(capped.checkpoint.step).toBe(2);
  expect(capped.losses.map((l) => l.step)).toEqual([1, 2]);
  expect(capped.trainedTokens).toBe(perStep[0]! + perStep[1]!);
  const whole = await runSftChunk(ckpt, examples, 3, sft, 5);
  expect(whole.checkpoint.step).toBe(3);
  expect(whole.trainedTokens).toBe(36);
  // Exactly at the budget: no further step.
  expect((await runSftChunk(ckpt, examples, 10, sft, 5, () => {}, 24)).checkpoint.step).toBe(2);
});
