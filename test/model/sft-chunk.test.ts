/** An SFT chunk under a trained-token budget (compare.sftBudget rl-trained-tokens) trains exactly the budget: the step that reaches it trains only what is left. */
import type { GptConfig } from '../../src/model/arch';
import { initTfBackend } from '../../src/model/backend';
import { initWeights } from '../../src/model/init';
import { Adam } from '../../src/model/adam';
import { Gpt } from '../../src/model/gpt';
import { trainedTokensOf, trainStep } from '../../src/rl/trainer';
import { learningRateAt } from '../../src/sft/schedule';
import { capTrainedTokens, runSftChunk, sampleSftBatch, type SftExample, type SftOptions } from '../../src/sft/sft';

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

test('cuts a batch to its first trained tokens in row order, position 0 and masked tokens untouched', () => {
  const batch = { tokens: [[1, 2, 3, 4], [5, 6, 7]], lossMask: [[1, 0, 1, 1], [0, 1, 1]] };
  expect(capTrainedTokens(batch, 3).lossMask).toEqual([[1, 0, 1, 1], [0, 1, 0]]);
  expect(capTrainedTokens(batch, 1).lossMask).toEqual([[1, 0, 1, 0], [0, 0, 0]]);
  expect(capTrainedTokens(batch, 0).lossMask).toEqual([[1, 0, 0, 0], [0, 0, 0]]);
  expect(capTrainedTokens(batch, 9)).toEqual(batch);
  expect(trainedTokensOf(capTrainedTokens(batch, 2))).toBe(2);
  expect(batch.lossMask).toEqual([[1, 0, 1, 1], [0, 1, 1]]); // not modified in place
});

test('trains until the budget is reached, exactly: the reaching step trains only what is left', async () => {
  const ckpt = { config: cfg, weights: initWeights(cfg, 1), step: 0 };
  const perStep = [1, 2, 3, 4].map((step) => trainedTokensOf(sampleSftBatch(examples, sft.batchSize, 5, step)));
  expect(perStep.every((n) => n === 12)).toBe(true); // 4 trained tokens per example, 3 examples a batch.
  const capped = await runSftChunk(ckpt, examples, 10, sft, 5, () => {}, perStep[0]! + 1);
  expect(capped.checkpoint.step).toBe(2);
  expect(capped.losses.map((l) => l.step)).toEqual([1, 2]);
  expect(capped.trainedTokens).toBe(perStep[0]! + 1);
  // The cut step trains on its first token only: the weights differ from a whole second step's.
  const twoWhole = await runSftChunk(ckpt, examples, 2, sft, 5);
  expect(twoWhole.trainedTokens).toBe(perStep[0]! + perStep[1]!);
  const differs = Object.entries(capped.checkpoint.weights).some(([k, w]) => w.some((x, i) => x !== twoWhole.checkpoint.weights[k]![i]));
  expect(differs).toBe(true);
  const whole = await runSftChunk(ckpt, examples, 3, sft, 5);
  expect(whole.checkpoint.step).toBe(3);
  expect(whole.trainedTokens).toBe(36);
  // Exactly at the budget: no further step.
  expect((await runSftChunk(ckpt, examples, 10, sft, 5, () => {}, 24)).checkpoint.step).toBe(2);
});

test('the cut step trains its kept tokens at the learning rate times the share kept', async () => {
  const ckpt = { config: cfg, weights: initWeights(cfg, 1), step: 0 };
  const budget = 12 + 3; // step 1 whole (12 tokens), step 2 cut to 3 of its 12
  const chunk = await runSftChunk(ckpt, examples, 10, sft, 5, () => {}, budget);
  // The same two updates by hand.
  const model = Gpt.fromWeights(cfg, ckpt.weights);
  const optimizer = new Adam(model.params, { lr: sft.learningRate, clipNorm: sft.gradClip });
  try {
    trainStep(model, sampleSftBatch(examples, sft.batchSize, 5, 1), optimizer, learningRateAt(1, sft.steps, sft.learningRate, sft.warmupSteps));
    const cut = capTrainedTokens(sampleSftBatch(examples, sft.batchSize, 5, 2), 3);
    trainStep(model, cut, optimizer, (3 / 12) * learningRateAt(2, sft.steps, sft.learningRate, sft.warmupSteps));
    const byHand = model.getWeights();
    for (const [name, w] of Object.entries(chunk.checkpoint.weights)) expect(Array.from(w)).toEqual(Array.from(byHand[name]!));
  } finally {
    optimizer.dispose();
    model.dispose();
  }
  expect(chunk.trainedTokens).toBe(budget);
});
