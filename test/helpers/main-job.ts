/** `node dist/scripts/main.js` as a user runs it, for the main job's process-level tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

const MAIN = path.join(REPO_ROOT, 'dist', 'scripts', 'main.js');

export interface MainExit {
  code: number | null;
  out: string;
}

/** Main processes still running; a file's afterAll kills them (killMainProcesses). */
const children = new Set<ChildProcess>();

export function startMain(args: string[], env: NodeJS.ProcessEnv): { child: ChildProcess; exit: Promise<MainExit>; output: () => string } {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const exit = new Promise<MainExit>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve({ code, out });
    }),
  );
  return { child, exit, output: () => out };
}

export function killMainProcesses(): void {
  for (const child of children) child.kill('SIGKILL');
}
