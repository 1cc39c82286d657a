/**
 * tfjs training throughput of the default policy, to size SFT/RL runs.
 *   npx tsc -p . && node dist/bench/train.js [--batch 32] [--seq 96] [--steps 5] [--pg]
 * Tokens/s counts every position of the batch (batch × seq), all of them trained on.
 */
import { Adam } from '../src/model/adam';
import { initTfBackend } from '../src/model/backend';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { Gpt } from '../src/model/gpt';
import { mulberry32 } from '../src/model/rng';
import { type TrainBatch, trainStep } from '../src/rl/trainer';
import { arg, flag } from './lib/args';

function randomBatch(rows: number, len: number, vocab: number, seed: number, pg: boolean): TrainBatch {
  const rand = mulberry32(seed);
  const tokens = Array.from({ length: rows }, () => Array.from({ length: len }, () => Math.floor(rand() * vocab)));
  const lossMask = tokens.map((r) => r.map((_, t) => (t === 0 ? 0 : 1)));
  if (!pg) return { tokens, lossMask };
  return { tokens, lossMask, advantages: tokens.map(() => rand() * 2 - 1) };
}

async function main(): Promise<void> {
  const rows = Number(arg('batch', '32'));
  const len = Number(arg('seq', '96'));
  const steps = Number(arg('steps', '5'));
  const pg = flag('pg');
  const backend = await initTfBackend();
  const cfg = DEFAULT_GPT_CONFIG;
  const model = Gpt.random(cfg, 1);
  const opt = new Adam(model.params, { lr: 1e-3 });
  trainStep(model, randomBatch(rows, len, cfg.vocabSize, 0, pg), opt); // warm-up (kernel setup)
  const times: number[] = [];
  for (let s = 1; s <= steps; s++) {
    const batch = randomBatch(rows, len, cfg.vocabSize, s, pg);
    const t0 = performance.now();
    trainStep(model, batch, opt);
    times.push((performance.now() - t0) / 1000);
  }
  const best = Math.min(...times);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  console.log(`backend ${backend.name}, model ${JSON.stringify(cfg)}, ${pg ? 'clipped PG' : 'SFT'} step, batch ${rows} × ${len}`);
  console.log(`step time: best ${best.toFixed(2)} s, mean ${mean.toFixed(2)} s over ${steps} steps`);
  console.log(`throughput: best ${((rows * len) / best).toFixed(0)} tok/s, mean ${((rows * len) / mean).toFixed(0)} tok/s`);
  opt.dispose();
  model.dispose();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
