/**
 * `npm run bench:train`: the two trainers side by side on the embedded policy (configs/default.yaml's
 * model and rl), in one run: one SFT step and one whole GRPO update (2 epochs x 2 mini-batches,
 * micro-batches by length) on the same synthetic rollout, tfjs (wasm, one thread) and torch (CPU, the
 * worker's code through bench/torch/train_step.py); tokens/s and achieved GFLOP/s against this
 * machine's fp32 matmul ceiling, measured here in onnxruntime and torch.
 *
 *   npm run bench:train -- [--episodes 64] [--repeat 3] [--seed 1]
 *
 * Tokens are the positions the passes run (tokensRun: every row's length, once per pass). FLOPs count
 * the model's own work per position, 6·(matmul parameters, head included) + 12·layers·d·context (the
 * attention products), the same for both trainers whatever each computes beyond it (tfjs multiplies
 * one-hot rows into the embeddings; torch runs the output head only where a loss reads it).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pythonBin } from '../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../scripts/lib/torch-worker';
import { loadRunConfig } from '../src/config/load';
import type { Sample } from '../src/domain/types';
import { Adam } from '../src/model/adam';
import type { GptConfig } from '../src/model/arch';
import { initTfBackend } from '../src/model/backend';
import { encodeCheckpoint } from '../src/model/checkpoint';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { Gpt } from '../src/model/gpt';
import { initWeights } from '../src/model/init';
import { mulberry32 } from '../src/domain/rng';
import { REPO_ROOT } from '../src/paths';
import { updatePolicy } from '../src/rl/policy-update';
import { trainStep, type TrainBatch } from '../src/rl/trainer';
import { arg } from './lib/args';
import { ortMatmulGflops } from './lib/ort-matmul';

/** A rollout shaped like the main job's: per episode a planner turn and one or two actor turns, tool text masked. */
function rollout(episodes: number, groupSize: number, vocab: number, seed: number): Sample[] {
  const rand = mulberry32(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
  const tokens = (n: number) => Array.from({ length: n }, () => int(3, vocab - 1));
  const out: Sample[] = [];
  for (let e = 0; e < episodes; e++) {
    const reward = rand() < 0.5 ? 1 : 0;
    const groupId = `g${Math.floor(e / groupSize)}`;
    for (const [role, prompt, response] of [['planner', int(30, 90), int(15, 45)], ...Array.from({ length: int(1, 2) }, () => ['actor', int(15, 40), int(8, 30)] as const)] as const) {
      const lossMask = Array.from({ length: response }, (_, t) => (t > 4 && t < 9 && role === 'actor' ? 0 : 1));
      out.push({
        promptTokens: tokens(prompt),
        responseTokens: tokens(response),
        logprobs: lossMask.map((m) => (m ? -rand() * 2 : 0)),
        lossMask,
        reward,
        metadata: { role, episodeId: `e${e}`, turn: 0, weightVersion: 0, groupId },
      });
    }
  }
  return out;
}

/** Model FLOPs of one position in training (forward + backward), at a mean context of `context` tokens. */
function flopsPerToken(c: GptConfig, context: number): number {
  const matmulParams = c.nLayers * (4 * c.dModel * c.dModel + 2 * c.dModel * c.dFf) + c.dModel * c.vocabSize;
  return 6 * matmulParams + 12 * c.nLayers * c.dModel * context;
}

const best = (xs: number[]): number => Math.min(...xs);

async function main(): Promise<void> {
  const episodes = Number(arg('episodes', '64'));
  const repeat = Number(arg('repeat', '3'));
  const seed = Number(arg('seed', '1'));
  const cfg = loadRunConfig(path.join(REPO_ROOT, 'configs', 'default.yaml'));
  const config = DEFAULT_GPT_CONFIG;
  const weights = initWeights(config, seed);
  const samples = rollout(episodes, cfg.rl.groupSize, config.vocabSize, seed);
  // An SFT step of the main job's batch size (the tfjs trainer runs it as one pass), from the rollout's rows.
  const sftRows = samples.slice(0, cfg.sft.batchSize);
  const sftBatch: TrainBatch = { tokens: sftRows.map((s) => [...s.promptTokens, ...s.responseTokens]), lossMask: sftRows.map((s) => [...s.promptTokens.map(() => 0), ...s.lossMask]) };
  const positions = sftBatch.tokens.reduce((n, r) => n + r.length, 0);
  const rows = samples.map((s) => s.promptTokens.length + s.responseTokens.length);
  const meanContext = rows.reduce((n, l) => n + (l * l) / 2, 0) / rows.reduce((n, l) => n + l, 0);
  const sftLr = cfg.sft.learningRate;

  const backend = await initTfBackend();
  const tfSft: number[] = [];
  const tfGrpo: number[] = [];
  let tfTokensRun = 0;
  for (let i = 0; i < repeat; i++) {
    const model = Gpt.fromWeights(config, weights);
    const adam = new Adam(model.params, { lr: sftLr, clipNorm: 1 });
    const t0 = performance.now();
    trainStep(model, sftBatch, adam, sftLr);
    tfSft.push((performance.now() - t0) / 1000);
    adam.dispose();
    model.dispose();
    const t1 = performance.now();
    const r = await updatePolicy({ config, weights, step: 0 }, samples, { rl: cfg.rl, step: 1, resetOptimizer: true, microBatchRows: cfg.rl.microBatch.rows, byLength: cfg.rl.microBatch.byLength, seed: 1 });
    tfGrpo.push((performance.now() - t1) / 1000);
    tfTokensRun = r.tokensRun;
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-bench-train-'));
  let torch: { sft: { seconds: number[] }; grpo: { seconds: number[]; numbers: { tokensRun: number } }; matmulGflops: number; threads: number; torch: string };
  try {
    const file = path.join(dir, 'ckpt.bin');
    fs.writeFileSync(file, encodeCheckpoint({ config, weights, step: 0 }));
    torch = JSON.parse(
      execFileSync(pythonBin(), [path.join(REPO_ROOT, 'bench', 'torch', 'train_step.py')], {
        input: JSON.stringify({ checkpoint: file, samples, sftRows: sftRows.length, rl: cfg.rl, sftLr, repeat }),
        env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR },
        maxBuffer: 64 << 20,
      }).toString(),
    ) as typeof torch;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const ortCeiling = await ortMatmulGflops();

  const perToken = flopsPerToken(config, meanContext);
  const row = (name: string, seconds: number, tokens: number) => {
    const tps = tokens / seconds;
    const gflops = (tps * perToken) / 1e9;
    return `| ${name} | ${seconds.toFixed(3)} | ${Math.round(tps).toLocaleString('en-US')} | ${gflops.toFixed(1)} | ${((100 * gflops) / ortCeiling).toFixed(1)}% | ${((100 * gflops) / torch.matmulGflops).toFixed(1)}% |`;
  };
  console.log(`bench:train ${new Date().toISOString()} on ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}); best of ${repeat}`);
  console.log(`policy ${JSON.stringify(config)}; rollout of ${episodes} episodes, ${samples.length} samples, mean context ${meanContext.toFixed(0)}; SFT step of ${sftRows.length} of its rows (${positions.toLocaleString('en-US')} positions); rl as configs/default.yaml (${cfg.rl.ppoEpochs} epochs x ${cfg.rl.miniBatches} mini-batches, micro-batches of ${cfg.rl.microBatch.rows} rows by length)`);
  console.log(`tfjs ${backend.name}; torch ${torch.torch} with ${torch.threads} threads. fp32 matmul ceiling (2048^3): onnxruntime ${ortCeiling.toFixed(0)} GFLOP/s, torch ${torch.matmulGflops.toFixed(0)} GFLOP/s`);
  console.log(`model FLOPs per position ${(perToken / 1e6).toFixed(2)} M (6 x matmul parameters + attention)`);
  console.log('');
  console.log('| step | seconds | tokens/s | GFLOP/s | of ORT ceiling | of torch ceiling |');
  console.log('|---|---:|---:|---:|---:|---:|');
  console.log(row('SFT step, tfjs', best(tfSft), positions));
  console.log(row('SFT step, torch', best(torch.sft.seconds), positions));
  console.log(row('GRPO update, tfjs', best(tfGrpo), tfTokensRun));
  console.log(row('GRPO update, torch', best(torch.grpo.seconds), torch.grpo.numbers.tokensRun));
  console.log('');
  console.log(`torch / tfjs tokens/s: SFT ${(best(tfSft) / best(torch.sft.seconds)).toFixed(1)}x, GRPO update ${((torch.grpo.numbers.tokensRun / best(torch.grpo.seconds)) / (tfTokensRun / best(tfGrpo))).toFixed(1)}x`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
