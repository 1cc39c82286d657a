/**
 * A production worker process (workers/<queue>.ts, or a bench's wrapper of workers/main.ts, or the
 * torch training worker) started from a script: the main job's trainer apart for asynchronous RL or
 * for trainer.backend torch, bench:async's process-per-queue layout. Resolves once the worker says it
 * is serving its queues; `exited` says when it ends on its own, since work on its queues would
 * otherwise wait quietly for a worker that is gone.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { niced } from './niced';

export interface WorkerProcess {
  pid: number;
  logFile: string;
  /** Resolves, describing how, if the process ends (or cannot start) before stop() is called. */
  exited: Promise<string>;
  /** SIGTERM (the worker shuts down gracefully), resolving once it has exited; safe to call again. */
  stop(): Promise<void>;
}

export interface WorkerProcessOptions {
  /** The script to run, and its arguments (the queues for workers/main.ts wrappers). */
  entry: string;
  /** The program that runs `entry` (default this node); the torch worker's is the project's Python. */
  program?: string;
  args?: string[];
  /** Flags for the program before `entry` (node's --cpu-prof, which NODE_OPTIONS does not take). */
  programArgs?: string[];
  /** Added to this process's environment (TEMPORAL_ADDRESS, DURABLE_RL_STORE, ...). */
  env: Record<string, string>;
  /** stdout and stderr go here. */
  logFile: string;
  /** Run under `nice -n` (1-19, added to this process's niceness); absent: this process's. */
  nice?: number;
  /** How long the worker may take to say it is serving (default 120 s). */
  startTimeoutMs?: number;
}

/** How long a SIGTERMed worker may take to exit: its activities drain first (an update takes seconds). */
const STOP_GRACE_MS = 60_000;

// The worker shuts down when this process is gone, however it ended (workers/main.ts, exitWithParent).
const EXIT_WITH_PARENT = { DURABLE_RL_EXIT_WITH_PARENT: '1' };

export async function startWorkerProcess(opts: WorkerProcessOptions): Promise<WorkerProcess> {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const log = fs.openSync(opts.logFile, 'a');
  const [command, args] = niced(opts.nice, opts.program ?? process.execPath, [...(opts.programArgs ?? []), opts.entry, ...(opts.args ?? [])]);
  const child = spawn(command, args, { env: { ...process.env, ...opts.env, ...EXIT_WITH_PARENT }, stdio: ['pipe', 'pipe', log] });
  const name = `worker process ${[path.basename(opts.entry), ...(opts.args ?? [])].join(' ')}`;
  let stopping: Promise<void> | undefined;
  const exited = new Promise<string>((resolve) => {
    child.once('error', (err) => resolve(`the ${name} could not run: ${err.message}`));
    child.once('exit', (code, signal) => {
      if (!stopping) resolve(`the ${name} (pid ${child.pid}) exited (${code ?? signal}); see ${opts.logFile}`);
    });
  });
  child.once('close', () => fs.closeSync(log));
  let out = '';
  const onOutput = (b: Buffer) => {
    fs.appendFileSync(log, b);
    out += b.toString();
  };
  child.stdout!.on('data', onOutput);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the ${name} did not say it was serving within ${(opts.startTimeoutMs ?? 120_000) / 1000} s; see ${opts.logFile}`)), opts.startTimeoutMs ?? 120_000);
      // workers/main.ts (and the torch worker) print this line once their workers run.
      const serving = () => {
        if (!out.includes(' serving ')) return;
        clearTimeout(timer);
        child.stdout!.off('data', serving);
        resolve();
      };
      child.stdout!.on('data', serving);
      void exited.then((why) => {
        clearTimeout(timer);
        reject(new Error(why));
      });
    });
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  // From here on the output only goes to the log.
  child.stdout!.off('data', onOutput);
  child.stdout!.on('data', (b: Buffer) => fs.appendFileSync(log, b));
  return {
    pid: child.pid!,
    logFile: opts.logFile,
    exited,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        // A worker whose workers have drained but whose process stays up (seen once after a
        // 25-minute bench: every worker STOPPED, the process idle in epoll) is killed.
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
        await gone;
        clearTimeout(timer);
      })()),
  };
}
