/** Repository root, found from this file so it is right from src/ (jest) and from dist/ (node). */
import fs from 'node:fs';
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
