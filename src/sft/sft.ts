/**
 * Supervised fine-tuning on tokenized demonstrations. Batches depend only on (seed, step), so a
 * chunk of steps retried after a crash reproduces the same updates from the same checkpoint.
 */
import { Adam } from '../model/adam';
import type { Checkpoint } from '../model/checkpoint';
import { Gpt } from '../model/gpt';
import { mixSeed, mulberry32 } from '../domain/rng';
import { trainedTokensOf, trainStep, type TrainBatch } from '../rl/trainer';
import { learningRateAt } from './schedule';

export interface SftExample {
  role: string;
  tokens: number[];
  /** Aligned with tokens: 1 = predict this token (model-written), 0 = prompt or tool output. */
  lossMask: number[];
}

export interface SftOptions {
  steps: number;
  batchSize: number;
  learningRate: number;
  warmupSteps: number;
  gradClip: number;
}

export function sampleSftBatch(examples: readonly SftExample[], batchSize: number, seed: number, step: number): TrainBatch {
  if (examples.length === 0) throw new RangeError('the SFT dataset is empty');
  const rand = mulberry32(mixSeed(seed, step));
  const tokens: number[][] = [];
  const lossMask: number[][] = [];
  for (let i = 0; i < batchSize; i++) {
    const ex = examples[Math.floor(rand() * examples.length)]!;
    tokens.push(ex.tokens);
    lossMask.push(ex.lossMask);
  }
  return { tokens, lossMask };
}

export interface SftChunkResult {
  checkpoint: Checkpoint;
  losses: Array<{ step: number; loss: number }>;
  tokensPerSec: number;
  /** Tokens the loss was taken on (loss mask 1, as RL counts its trained tokens), over the chunk's steps. */
  trainedTokens: number;
}

/**
 * The batch with its loss mask cut to the first `max` trained tokens, in row order (trainedTokensOf's
 * count: position 0 never trains), so that a budget of trained tokens is spent exactly.
 */
export function capTrainedTokens<B extends TrainBatch>(batch: B, max: number): B {
  let left = Math.max(0, max);
  const lossMask = batch.lossMask.map((row) =>
    row.map((m, i) => {
      if (i === 0 || m <= 0) return m;
      if (left <= 0) return 0;
      left--;
      return m;
    }),
  );
  return { ...batch, lossMask };
}

/**
 * Trains from ckpt.step + 1 up to toStep, or (maxTrainedTokens) only until that many tokens were
 * trained: the step that reaches the budget trains only the tokens left of it (at the learning rate
 * times the share of its tokens kept), so the chunk trains exactly maxTrainedTokens when its steps
 * hold that many. onStep runs between steps (heartbeats, cancellation).
 */
export async function runSftChunk(
  ckpt: Checkpoint,
  examples: readonly SftExample[],
  toStep: number,
  opts: SftOptions,
  seed: number,
  onStep: (step: number, loss: number) => void | Promise<void> = () => {},
  maxTrainedTokens = Infinity,
): Promise<SftChunkResult> {
  const model = Gpt.fromWeights(ckpt.config, ckpt.weights);
  const optimizer = new Adam(model.params, { lr: opts.learningRate, clipNorm: opts.gradClip });
  try {
    if (ckpt.optimizer) optimizer.setState({ ...ckpt.optimizer, config: { ...ckpt.optimizer.config, clipNorm: opts.gradClip } });
    const losses: Array<{ step: number; loss: number }> = [];
    let tokens = 0;
    let trainedTokens = 0;
    let lastStep = ckpt.step;
    const started = performance.now();
    for (let step = ckpt.step + 1; step <= toStep && trainedTokens < maxTrainedTokens; step++) {
      const sampled = sampleSftBatch(examples, opts.batchSize, seed, step);
      const whole = trainedTokensOf(sampled);
      const trained = Math.min(whole, maxTrainedTokens - trainedTokens);
      const batch = trained < whole ? capTrainedTokens(sampled, trained) : sampled;
      // The loss is a mean over the batch's trained tokens, so a cut step would weigh its few tokens
      // as a whole step's; its learning rate shrinks by the share it kept instead.
      const kept = trained < whole ? trained / whole : 1;
      const lr = kept * learningRateAt(step, opts.steps, opts.learningRate, opts.warmupSteps);
      const r = trainStep(model, batch, optimizer, lr);
      if (!Number.isFinite(r.loss)) throw new Error(`SFT loss is ${r.loss} at step ${step}`);
      losses.push({ step, loss: r.loss });
      tokens += batch.tokens.reduce((a, row) => a + row.length, 0);
      trainedTokens += trained;
      lastStep = step;
      await onStep(step, r.loss);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      checkpoint: { config: ckpt.config, weights: model.getWeights(), optimizer: optimizer.getState(), step: maxTrainedTokens === Infinity ? Math.max(toStep, ckpt.step) : lastStep },
      losses,
      tokensPerSec: seconds > 0 ? tokens / seconds : 0,
      trainedTokens,
    };
  } finally {
    optimizer.dispose();
    model.dispose();
  }
}
