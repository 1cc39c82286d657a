/**
 * The two trainers on the same GPT-2 weights and batch: the tfjs trainer (src/rl, src/sft) and the
 * torch worker's (python/durable_rl_torch, through test/fixtures/torch_parity.py) give the same SFT
 * loss and gradients, the same policy-gradient loss and gradients, and after one SFT step and one
 * whole GRPO update (two epochs, two mini-batches, micro-batches by length) the same weights and
 * update metrics, in float32.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { pythonBin } from '../../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';
import { parseRunConfig } from '../../src/config/parse';
import type { Sample } from '../../src/domain/types';
import { Adam } from '../../src/model/adam';
import { weightShapes, type GptConfig, type WeightMap } from '../../src/model/arch';
import { initTfBackend } from '../../src/model/backend';
import { encodeCheckpoint } from '../../src/model/checkpoint';
import { Gpt } from '../../src/model/gpt';
import { initWeights } from '../../src/model/init';
import { mulberry32 } from '../../src/domain/rng';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { buildPgBatch } from '../../src/rl/grpo';
import { pgLossOptions, updatePolicy } from '../../src/rl/policy-update';
import { computeGradients, trainStep, type TrainBatch } from '../../src/rl/trainer';

const TOLERANCE = 1e-4;

function samplesOf(seed: number, vocab: number): Sample[] {
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const out: Sample[] = [];
  for (let g = 0; g < 4; g++) {
    for (let e = 0; e < 4; e++) {
      const n = int(4, 16);
      const lossMask = Array.from({ length: n }, (_, t) => (t >= 3 && t < 5 ? 0 : 1));
      out.push({
        promptTokens: Array.from({ length: int(3, 10) }, () => int(3, vocab - 1)),
        responseTokens: Array.from({ length: n }, () => int(3, vocab - 1)),
        // Near the policy's own logprobs (about -log V), so the ratios spread across the clip bounds.
        logprobs: lossMask.map((m) => (m ? -Math.log(vocab) + (rand() - 0.5) * 0.6 : 0)),
        lossMask,
        reward: rand() < 0.5 ? 1 : 0,
        metadata: { role: e % 2 ? 'actor' : 'planner', episodeId: `g${g}e${e}`, turn: 0, weightVersion: 0, groupId: `g${g}` },
      });
    }
  }
  return out;
}

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] as number) - (b[i] as number)));
  return m;
};

function expectWeightsClose(config: GptConfig, tsWeights: WeightMap | tf.NamedTensorMap, torchWeights: Record<string, number[]>, what: string): void {
  for (const [name] of weightShapes(config)) {
    const mine = tsWeights[name];
    const data = mine instanceof Float32Array ? mine : (mine as tf.Tensor).dataSync();
    const d = maxAbsDiff(data, torchWeights[name]!);
    if (d > TOLERANCE) throw new Error(`${what} ${name} differs by ${d}`);
  }
}

it('tfjs and torch compute the same SFT and GRPO losses, gradients and updated weights', async () => {
  await initTfBackend();
  const tok = loadTokenizer();
  const config: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 64, dModel: 32, nLayers: 2, nHeads: 2, dFf: 64 };
  const weights = initWeights(config, 3);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-parity-'));
  try {
    const file = path.join(dir, 'ckpt.bin');
    fs.writeFileSync(file, encodeCheckpoint({ config, weights, step: 0 }));
    const samples = samplesOf(11, config.vocabSize);
    const sftBatch: TrainBatch = { tokens: samples.map((s) => [...s.promptTokens, ...s.responseTokens]), lossMask: samples.map((s) => [...s.promptTokens.map(() => 0), ...s.lossMask]) };
    // verl's loss with its asymmetric clip, off-policy logprobs (two epochs), an entropy bonus and the Dr.GRPO mode.
    const rl = parseRunConfig({ rl: { steps: 1, promptsPerStep: 4, groupSize: 4, learningRate: 1e-3, ppoEpochs: 2, miniBatches: 2, clipEpsHigh: 0.28, entropyCoeff: 0.01, lossAggMode: 'seq-mean-token-sum-norm', microBatch: { rows: 3, byLength: true } } }).rl;
    const torch = JSON.parse(
      execFileSync(pythonBin(), [path.join(REPO_ROOT, 'test', 'fixtures', 'torch_parity.py')], {
        input: JSON.stringify({ checkpoint: file, sft: { ...sftBatch, lr: 1e-3, clip: 1 }, pg: { samples, rl }, grpo: { samples, rl, seed: 5 } }),
        env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR },
        maxBuffer: 256 << 20,
      }).toString(),
    ) as Record<string, unknown> & { sftGrads: Record<string, number[]>; sftWeights: Record<string, number[]>; pgGrads: Record<string, number[]>; grpoWeights: Record<string, number[]>; grpo: Record<string, number> };

    // SFT: loss, gradients, one Adam step.
    let model = Gpt.fromWeights(config, weights);
    const sft = computeGradients(model, sftBatch);
    expect(Math.abs(sft.loss - (torch.sftLoss as number))).toBeLessThan(TOLERANCE);
    expectWeightsClose(config, sft.grads, torch.sftGrads, 'SFT gradient of');
    tf.dispose(Object.values(sft.grads));
    const adam = new Adam(model.params, { lr: 1e-3, clipNorm: 1 });
    trainStep(model, sftBatch, adam, 1e-3);
    expectWeightsClose(config, model.getWeights(), torch.sftWeights, 'SFT step: weight');
    adam.dispose();
    model.dispose();

    // The policy-gradient loss of the whole batch and its gradients.
    model = Gpt.fromWeights(config, weights);
    const built = buildPgBatch(samples, { maxSeq: config.maxSeq, normAdvByStd: rl.normAdvByStd, epsilon: rl.advEpsilon });
    const pg = computeGradients(model, built.batch, { pg: pgLossOptions(rl) });
    expect(Math.abs(pg.loss - (torch.pgLoss as number))).toBeLessThan(TOLERANCE);
    expectWeightsClose(config, pg.grads, torch.pgGrads, 'policy-gradient gradient of');
    tf.dispose(Object.values(pg.grads));
    model.dispose();

    // A whole GRPO update: four optimiser steps over shuffled mini-batches of whole groups.
    const update = await updatePolicy({ config, weights, step: 0 }, samples, { rl, step: 1, resetOptimizer: true, microBatchRows: 3, byLength: true, seed: 5 });
    for (const key of ['loss', 'pgLoss', 'pgClipFrac', 'approxKl', 'entropy', 'gradNorm', 'gradNormLast'] as const) {
      if (Math.abs(update[key] - torch.grpo[key]!) > TOLERANCE) throw new Error(`GRPO ${key}: tfjs ${update[key]}, torch ${torch.grpo[key]}`);
    }
    for (const key of ['optimizerSteps', 'tokens', 'rows', 'tokensRun', 'paddedTokensRun', 'groups', 'flatGroups'] as const) expect(torch.grpo[key]).toBe(update[key]);
    expectWeightsClose(config, update.checkpoint.weights, torch.grpoWeights, 'GRPO update: weight');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
