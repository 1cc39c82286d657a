/**
 * The production worker entries (dist/workers/<entry>.js) as separate OS processes: what the local
 * multi-process deployment (scripts/scale-local.ts) and bench:scale start. Each process is handed
 * its settings by environment, its output goes to a log file, and it counts as ready once it prints
 * the "serving" line (after its blob store check and its Temporal connection succeeded).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

export type WorkerEntry = 'orchestration' | 'inference' | 'trainer' | 'tools' | 'all';

export interface WorkerProcess {
  entry: WorkerEntry;
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** Resolves once the worker serves its queues; rejects if it exits first. */
  ready: Promise<void>;
  /** SIGTERM (a graceful shutdown), resolving once it exited. */
  stop(): Promise<void>;
  /** SIGKILL, resolving once it exited. */
  kill(): Promise<void>;
}

export interface SpawnOptions {
  /** Added to this process's environment (Temporal address, store, concurrency...). */
  env: Record<string, string>;
  /** Flags after the script name. */
  args?: string[];
  logFile: string;
}

export function spawnWorker(entry: WorkerEntry, opts: SpawnOptions): WorkerProcess {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', `${entry}.js`), ...(opts.args ?? [])], {
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  // 'close' comes after the process exited and its output was read; then the log is flushed too.
  const exited = new Promise<void>((resolve) => child.once('close', () => log.end(() => resolve())));
  const ready = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/\] serving /.test(out)) resolve();
    });
    void exited.then(() => reject(new Error(`${entry} worker exited (${child.signalCode ?? child.exitCode}) before serving; see ${opts.logFile}`)));
  });
  // Callers that never await it (they stopped it first) must not see an unhandled rejection.
  ready.catch(() => undefined);
  const signal = async (sig: NodeJS.Signals): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
    await exited;
  };
  return { entry, child, pid: child.pid ?? -1, logFile: opts.logFile, ready, stop: () => signal('SIGTERM'), kill: () => signal('SIGKILL') };
}
