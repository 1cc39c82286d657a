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
