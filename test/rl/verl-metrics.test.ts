/**
 * The update's metrics against verl 0.9.1's own code on the same numbers (scripts/python/verl_reference.py):
 * actor/ppo_kl (compute_policy_loss_vanilla per mini-batch, reduced over steps by verl.utils.metric),
 * actor/entropy (agg_loss of the pre-update entropy over the whole batch, in every aggregation mode)
 * and actor/reward_kl_penalty (ray_trainer.apply_kl_penalty). The batches have rows with advantage
 * 0 (skipped in the trainer's gradient passes) and fully masked rows, which every metric must
 * treat as verl does.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { RlSchema, type KlKind, type LossAggMode } from '../../src/config/schema';
import type { Sample } from '../../src/domain/types';
import type { GptConfig } from '../../src/model/arch';
import { Adam } from '../../src/model/adam';
import { initTfBackend } from '../../src/model/backend';
import type { Checkpoint } from '../../src/model/checkpoint';
import { Gpt } from '../../src/model/gpt';
import { initWeights } from '../../src/model/init';
import { disposePacked, pack, targetLogprobsAndEntropy } from '../../src/model/logprobs';
import { mixSeed, mulberry32 } from '../../src/domain/rng';
import { buildPgBatch, groupAdvantages } from '../../src/rl/grpo';
import { miniBatchRows, pgLossOptions, updatePolicy, type PolicyUpdateOptions } from '../../src/rl/policy-update';
import { sequenceLogprobs, trainStep, type PgLossOptions, type TrainBatch } from '../../src/rl/trainer';
import { REPO_ROOT } from '../../src/paths';
import { pythonBin } from '../../scripts/lib/python-env';

const cfg: GptConfig = { vocabSize: 16, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
const MODES: LossAggMode[] = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'];
const T = 0.7;

interface MetricsCase {
  steps: Array<{ old: number[][]; logp: number[][]; adv: number[][]; mask: number[][] }>;
  entropy: number[][];
  mask: number[][];
  mode: LossAggMode;
  scale: number;
}
interface RewardKlCase {
  old: number[][];
  ref: number[][];
  mask: number[][];
  kind: KlKind;
  coef: number;
}
interface VerlOut {
  metrics: Array<{ ppo_kl: number; entropy: number }>;
  reward_kl: number[];
}

/** Per row, aligned with its tokens (entry t concerns token t; entry 0 is 0): log p and entropy under T. */
function tokenStats(model: Gpt, tokens: number[][]): { logp: number[][]; entropy: number[][] } {
  const p = pack(tokens, model.config.maxSeq);
  const [lp, ent] = tf.tidy(() => {
    const s = targetLogprobsAndEntropy(model, p, T);
    return [s.logp.arraySync(), s.entropy.arraySync()];
  }) as unknown as [number[][], number[][]];
  disposePacked(p);
  const aligned = (m: number[][]): number[][] => tokens.map((row, r) => row.map((_, t) => (t === 0 ? 0 : m[r]![t - 1]!)));
  return { logp: aligned(lp), entropy: aligned(ent) };
}

/** Float32 forward passes against verl's float64 sums: a relative bound well under the differences it must catch. */
function expectNear(ours: number | undefined, theirs: number, rel = 3e-7): void {
  expect(Math.abs(ours! - theirs)).toBeLessThan(rel * Math.max(1, Math.abs(theirs)));
}

/** Rows cut to `from` onwards and right-padded to one width (padding masked out), as verl's response tensors. */
function padded(rows: number[][], from: number[], width: number): number[][] {
  return rows.map((row, r) => Array.from({ length: width }, (_, t) => row[from[r]! + t] ?? 0));
}

// ---- one trainer step: a mini-batch with zero-advantage and fully masked rows -----------------------------

const stepModel = (): Gpt => Gpt.random(cfg, 31);

function stepBatch(model: Gpt): TrainBatch {
  const rand = mulberry32(77);
  const lengths = [7, 4, 9, 5, 6, 8, 5];
  const tokens = lengths.map((n) => Array.from({ length: n }, () => 2 + Math.floor(rand() * (cfg.vocabSize - 2))));
  // Rows 5 and 6 fully masked (6 also has advantage 0); row 2 has a masked hole.
  const lossMask = tokens.map((row, r) => row.map((_, t) => (r >= 5 ? 0 : t >= 2 && !(r === 2 && t === 5) ? 1 : 0)));
  const lp = sequenceLogprobs(model, tokens, 32, T);
  const oldLogprobs = lp.map((row) => row.map((v) => v + (rand() - 0.5) * 1.2));
  // Rows 1, 3 and 6 have advantage 0: with no entropy or KL term the trainer skips their gradient pass.
  return { tokens, lossMask, advantages: [1, 0, -0.7, 0, 0.3, 0.4, 0], oldLogprobs };
}

const stepPg = (aggMode: LossAggMode): PgLossOptions => ({ clipLow: 0.2, clipHigh: 0.28, dualClipC: 3, aggMode, lossScaleFactor: 12, temperature: T, entropyCoeff: 0 });

function stepCase(mode: LossAggMode): MetricsCase {
  const model = stepModel();
  const batch = stepBatch(model);
  const { logp, entropy } = tokenStats(model, batch.tokens);
  model.dispose();
  const width = Math.max(...batch.tokens.map((r) => r.length)) - 1;
  const one = batch.tokens.map(() => 1);
  const mask = padded(batch.lossMask, one, width);
  const step = {
    old: padded(batch.oldLogprobs!, one, width),
    logp: padded(logp, one, width),
    adv: batch.advantages!.map((a) => new Array<number>(width).fill(a)),
    mask,
  };
  return { steps: [step], entropy: padded(entropy, one, width), mask, mode, scale: 12 };
}

// ---- updatePolicy: two epochs of two mini-batches over three groups, one of them flat ----------------------

const ckpt: Checkpoint = { config: cfg, weights: initWeights(cfg, 3), step: 10 };
const SEED = 7;

function rollout(): Sample[] {
  const rand = mulberry32(5);
  const model = Gpt.fromWeights(cfg, ckpt.weights);
  const out: Sample[] = [];
  // g1 is flat: its rows have advantage 0.
  const rewards = [
    [1, 0, 0, 1],
    [0, 0, 0, 0],
    [1, 0, 1],
  ];
  rewards.forEach((groupRewards, g) => {
    const prompt = [1, 2 + g];
    groupRewards.forEach((reward, e) => {
      const response = Array.from({ length: 3 + ((g + e) % 4) }, () => 4 + Math.floor(rand() * 12));
      const lp = (sequenceLogprobs(model, [[...prompt, ...response]], 32, T)[0] as number[]).slice(prompt.length);
      out.push({
        promptTokens: prompt,
        responseTokens: response,
        // Behaviour logprobs away from the checkpoint's, so old - new is not 0.
        logprobs: lp.map((v) => v + (rand() - 0.5) * 0.8),
        lossMask: response.map((_, t) => (e === 1 && t === response.length - 1 ? 0 : 1)),
        reward,
        metadata: { role: 'single', episodeId: `e${g}-${e}`, groupId: `g${g}`, turn: 0, weightVersion: 1 },
      });
    });
  });
  model.dispose();
  return out;
}

function updateOptions(mode: LossAggMode): PolicyUpdateOptions {
  const rl = RlSchema.parse({ learningRate: 1e-2, temperature: T, promptsPerStep: 3, ppoEpochs: 2, miniBatches: 2, lossAggMode: mode, maxNewTokens: 10 });
  // Learning rate 0: every step sees the checkpoint's weights, as verl's pre-update entropy does.
  return { rl: { ...rl, learningRate: 0 }, step: 11, resetOptimizer: true, microBatchRows: 3, seed: SEED };
}

function updateCase(samples: Sample[], mode: LossAggMode): MetricsCase {
  const opts = updateOptions(mode);
  const model = Gpt.fromWeights(cfg, ckpt.weights);
  const { logp, entropy } = tokenStats(model, samples.map((s) => [...s.promptTokens, ...s.responseTokens]));
  model.dispose();
  const from = samples.map((s) => s.promptTokens.length);
  const width = Math.max(...samples.map((s) => s.responseTokens.length));
  const respLogp = padded(logp, from, width);
  const respEnt = padded(entropy, from, width);
  const old = padded(samples.map((s) => s.logprobs), samples.map(() => 0), width);
  const mask = padded(samples.map((s) => s.lossMask), samples.map(() => 0), width);
  // The update's mini-batches, as updatePolicy deals them (one row per sample here).
  const built = buildPgBatch(samples, { maxSeq: cfg.maxSeq, normAdvByStd: opts.rl.normAdvByStd, epsilon: opts.rl.advEpsilon });
  expect(built.batch.tokens).toHaveLength(samples.length);
  const steps = [0, 1].flatMap((epoch) =>
    miniBatchRows(built.rowGroups, 2, mulberry32(mixSeed(SEED, epoch))).map((rows) => {
      const pick = (m: number[][]): number[][] => rows.map((r) => m[r]!);
      return { old: pick(old), logp: pick(respLogp), adv: pick(mask).map((row) => row.map(() => 0)), mask: pick(mask) };
    }),
  );
  return { steps, entropy: respEnt, mask, mode, scale: pgLossOptions(opts.rl).lossScaleFactor! };
}

// ---- reward_kl_penalty: ragged masks, fully masked samples with and without reference logprobs -------------

const KINDS: KlKind[] = ['kl', 'low_var_kl', 'k2'];

function klSamples(): { samples: Sample[]; refs: Array<number[] | undefined> } {
  const rand = mulberry32(11);
  const samples: Sample[] = [];
  const refs: Array<number[] | undefined> = [];
  for (let i = 0; i < 7; i++) {
    const n = 2 + (i % 4);
    const logprobs = Array.from({ length: n }, () => -3 * rand());
    // Samples 3 and 5 have no trained token; 5 has no reference logprobs (as referenceLogprobs leaves it).
    const lossMask = logprobs.map((_, t) => (i === 3 || i === 5 ? 0 : t === 1 && i % 2 === 0 ? 0 : 1));
    samples.push({
      promptTokens: [1],
      responseTokens: logprobs.map(() => 4),
      logprobs,
      lossMask,
      reward: i % 2,
      metadata: { role: 'single', episodeId: `e${i}`, groupId: `g${i % 2}`, turn: 0, weightVersion: 1 },
    });
    refs.push(i === 5 ? undefined : logprobs.map((v) => v - 1.5 * (rand() - 0.3)));
  }
  return { samples, refs };
}

function rewardKlCase(kind: KlKind): RewardKlCase {
  const { samples, refs } = klSamples();
  const width = Math.max(...samples.map((s) => s.logprobs.length));
  const zero = samples.map(() => 0);
  return {
    old: padded(samples.map((s) => s.logprobs), zero, width),
    ref: padded(refs.map((r, i) => r ?? samples[i]!.logprobs.map(() => 0)), zero, width),
    mask: padded(samples.map((s) => s.lossMask), zero, width),
    kind,
    coef: 0.05,
  };
}

// -------------------------------------------------------------------------------------------------------------

let samples: Sample[];
let verl: VerlOut;

beforeAll(async () => {
  await initTfBackend();
  samples = rollout();
  const metrics = [...MODES.map(stepCase), ...MODES.map((m) => updateCase(samples, m))];
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'scripts', 'python', 'verl_reference.py')], {
    input: JSON.stringify({ metrics, reward_kl: KINDS.map(rewardKlCase) }),
    env: { ...process.env, RAY_DISABLE_IMPORT_WARNING: '1' },
    maxBuffer: 16 << 20,
  });
  verl = JSON.parse(out.toString('utf8')) as VerlOut;
}, 120_000);

test.each(MODES.map((m, i) => [m, i] as const))('%s: a step reports verl\'s ppo_kl and entropy over every row, zero-advantage rows included', (mode, k) => {
  const model = stepModel();
  const batch = stepBatch(model);
  const opt = new Adam(model.params, { lr: 1e-2 });
  const r = trainStep(model, batch, opt, undefined, { pg: stepPg(mode), microBatchRows: 2 });
  const v = verl.metrics[k]!;
  // The zero-advantage rows were left out of the gradient passes (their tokens were not run).
  expect(r.tokensRun).toBe([7, 9, 6, 8].reduce((a, b) => a + b, 0));
  expect(v.ppo_kl).not.toBe(0);
  expect(r.approxKl).toBeCloseTo(v.ppo_kl, 5);
  expectNear(r.entropy, v.entropy);
  model.dispose();
  opt.dispose();
});

test.each(MODES.map((m, i) => [m, i] as const))('%s: an update over epochs and mini-batches reports verl\'s reduced ppo_kl and whole-batch entropy', async (mode, k) => {
  const r = await updatePolicy(ckpt, samples, updateOptions(mode));
  expect(r.optimizerSteps).toBe(4);
  expect(r.flatGroups).toBe(1);
  const v = verl.metrics[MODES.length + k]!;
  expect(r.approxKl).toBeCloseTo(v.ppo_kl, 5);
  expectNear(r.entropy, v.entropy);
});

test.each(KINDS.map((kind, i) => [kind, i] as const))('%s: rewardKlPenalty is apply_kl_penalty\'s actor/reward_kl_penalty, fully masked samples counting 0', (kind, k) => {
  const { samples: klS, refs } = klSamples();
  const stats = groupAdvantages(klS, { normAdvByStd: true, epsilon: 1e-6, klInReward: { coef: 0.05, kind, refLogprobs: refs } });
  expect(stats.rewardKlPenalty).toBeCloseTo(verl.reward_kl[k]!, 6);
});
