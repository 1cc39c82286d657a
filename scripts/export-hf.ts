/**
 * `npm run export:hf -- --run <workflow id> --out <dir> [--step N]`: a run's checkpoint (default its
 * latest) as a Hugging Face GPT-2 directory that transformers and vLLM load (src/model/hf-export.ts).
 * Reads the blob store the workers use (DURABLE_RL_STORE and friends, default .data/store).
 */
import { Command } from 'commander';
import { checkpointSteps, names } from '../src/store/run-names';
import { decodeCheckpoint } from '../src/model/checkpoint';
import { writeHfDir } from '../src/model/hf-dir';
import { loadTokenizer } from '../src/model/tokenizer';
import { defaultStore } from '../workers/create-workers';
import { runMain } from './lib/run-main';

async function main(): Promise<number> {
  const opts = new Command()
    .name('export-hf')
    .requiredOption('--run <id>', 'workflow id of the training run')
    .requiredOption('--out <dir>', 'directory to write (replaced if it exists)')
    .option('--step <n>', 'checkpoint step (default: the latest)')
    .parse()
    .opts<{ run: string; out: string; step?: string }>();
  const store = defaultStore();
  const steps = await checkpointSteps(store, opts.run);
  if (steps.length === 0) {
    console.error(`export:hf: no checkpoints of run '${opts.run}' in the blob store`);
    return 2;
  }
  const step = opts.step !== undefined ? Number(opts.step) : Math.max(...steps);
  const ref = Number.isInteger(step) ? await store.getName(names.checkpoint(opts.run, step)) : undefined;
  if (!ref) {
    console.error(`export:hf: --step ${opts.step}: run '${opts.run}' has checkpoints at steps ${steps.join(', ')}`);
    return 2;
  }
  const ckpt = decodeCheckpoint(await store.get(ref));
  const dir = writeHfDir(opts.out, { config: ckpt.config, weights: ckpt.weights, tokenizer: loadTokenizer(), meta: { run_id: opts.run, step: String(ckpt.step) } });
  console.log(`exported ${opts.run} step ${ckpt.step} to ${dir} (GPT2LMHeadModel, float32)`);
  return 0;
}

runMain(main);
