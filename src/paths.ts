/** Repository root, found from this file so it is right from src/ (jest) and from dist/ (node). */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function findRepoRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'tsconfig.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no repository root above ${start}`);
  }
}

export const REPO_ROOT = findRepoRoot(__dirname);
export const DATA_DIR = path.join(REPO_ROOT, '.data');

/** Where runs write their metrics files: DURABLE_RL_RUNS, else .data/runs. */
export function defaultRunsDir(): string {
  return process.env.DURABLE_RL_RUNS ?? path.join(DATA_DIR, 'runs');
}

/** The cache the setup scripts build Python environments in: DURABLE_RL_CACHE, else ~/.cache/durable-rl. */
export function cacheDir(): string {
  return process.env.DURABLE_RL_CACHE ?? path.join(os.homedir(), '.cache', 'durable-rl');
}

/** An environment scripts/setup-python.sh builds, named `<prefix>-<hash of its pin files>` (scripts/python/<file>). */
export function pinnedEnvDir(prefix: string, pinFiles: readonly string[]): string {
  const hash = createHash('sha256');
  for (const f of pinFiles) hash.update(fs.readFileSync(path.join(REPO_ROOT, 'scripts', 'python', f)));
  return path.join(cacheDir(), `${prefix}-${hash.digest('hex').slice(0, 12)}`);
}

/** TensorBoard's environment (scripts/python/tensorboard.txt): its python runs the event-file writer (tracking.tensorboard). */
export function tensorboardEnvDir(): string {
  return pinnedEnvDir('tensorboard', ['tensorboard.txt']);
}
