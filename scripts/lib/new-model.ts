/**
 * A randomly initialised Hugging Face directory of a run's model.* (any model.arch), made by the torch
 * worker's code (python/durable_rl_torch/new_model.py): vLLM's placeholder for a run whose weights are
 * synced, and the Qwen3 and Llama policies of the tests.
 */
import { execFileSync } from 'node:child_process';
import type { RunConfig } from '../../src/config/schema';
import { pythonBin } from './python-env';
import { TORCH_PACKAGE_DIR } from './torch-worker';

export function writeNewModel(model: RunConfig['model'], seed: number, dir: string): string {
  execFileSync(pythonBin(), ['-m', 'durable_rl_torch.new_model', '--model', JSON.stringify(model), '--seed', String(seed), '--out', dir], {
    env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return dir;
}
