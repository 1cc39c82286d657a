/**
 * Production workers as separate OS processes for crash and scale-out tests: started against a
 * test's namespace and blob store (its folder, or any store given by environment, such as S3),
 * optionally built to freeze inside an activity (test/fixtures/freezing-worker.ts), and SIGKILLed.
 * Every process started here is killed by killAll().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { testAddress } from './temporal';
import { pythonBin } from '../../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';

export type WorkerEntry = 'orchestration' | 'trainer' | 'inference' | 'tools';
const QUEUE_OF: Record<WorkerEntry, string> = { orchestration: 'orchestration', trainer: 'training', inference: 'inference', tools: 'tools' };

export interface FreezingWorker {
  child: ChildProcess;
  /** Resolves with the FROZEN line once the process is stuck inside the activity. */
  frozen: Promise<string>;
}

/** `ctx.store`: the test's folder store; without it, `storeEnv` names the store (DURABLE_RL_STORE=s3://...). */
export function workerProcesses(ctx: { namespace: string; store?: FsBlobStore }, storeEnv: Record<string, string> = {}) {
  const children = new Set<ChildProcess>();
  // The test's own attempt journal (workers/attempt-journal.ts): a killed worker's replacement reads
  // it, and nothing is left in the repository's .data.
  const journal = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-attempts-'));
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    DURABLE_RL_ATTEMPT_JOURNAL: journal,
    TEMPORAL_ADDRESS: testAddress(),
    TEMPORAL_NAMESPACE: ctx.namespace,
    ...(ctx.store ? { DURABLE_RL_STORE: ctx.store.root } : {}),
    ...storeEnv,
    ...extra,
  });
  const track = (child: ChildProcess): ChildProcess => {
    children.add(child);
    child.on('exit', () => children.delete(child));
    return child;
  };
  const killHard = async (child: ChildProcess): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  };

  /** The production worker entry (dist/workers/<entry>.js), with `extraEnv` on top (concurrency, metrics port). */
  const spawnWorker = (entry: WorkerEntry, extraEnv: Record<string, string> = {}): ChildProcess =>
    track(spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', `${entry}.js`)], { env: env(extraEnv), stdio: ['ignore', 'inherit', 'inherit'] }));

  /** The same worker, frozen at `freezeAt` (<activity type>:<heartbeat field or start>:<value>). */
  const spawnFreezingWorker = (entry: WorkerEntry, freezeAt: string, extraEnv: Record<string, string> = {}): FreezingWorker => {
    const script = path.join(REPO_ROOT, 'dist', 'test', 'fixtures', 'freezing-worker.js');
    const child = track(spawn(process.execPath, [script, QUEUE_OF[entry]], { env: env({ ...extraEnv, DURABLE_RL_FREEZE_AT: freezeAt }), stdio: ['ignore', 'pipe', 'inherit'] }));
    const frozen = new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const line = out.split('\n').find((l) => l.startsWith('FROZEN '));
        if (line) resolve(line);
      });
      child.once('exit', (code) => reject(new Error(`${entry} worker exited (${code}) before freezing at ${freezeAt}`)));
    });
    // A test that never awaits it (it failed earlier) must not leave an unhandled rejection behind.
    frozen.catch(() => undefined);
    return { child, frozen };
  };

  /** Kills the worker once it has frozen mid-activity and starts a healthy one in its place. */
  const killWhenFrozen = async (entry: WorkerEntry, worker: FreezingWorker): Promise<string> => {
    const line = await worker.frozen;
    await killHard(worker.child);
    spawnWorker(entry);
    return line;
  };

  /**
   * The torch training worker (python/durable_rl_torch) on the test's namespace and store; with
   * `freezeAt`, its freezing twin (test/fixtures/freezing_torch_worker.py). `serving` resolves once it polls.
   */
  const spawnTorchWorker = (freezeAt?: string): FreezingWorker & { serving: Promise<void> } => {
    const args = freezeAt ? [path.join(REPO_ROOT, 'test', 'fixtures', 'freezing_torch_worker.py')] : ['-m', 'durable_rl_torch.worker'];
    const child = track(
      spawn(pythonBin(), args, {
        env: env({ PYTHONPATH: TORCH_PACKAGE_DIR, PYTHONUNBUFFERED: '1', ...(freezeAt ? { DURABLE_RL_FREEZE_AT: freezeAt } : {}) }),
        stdio: ['ignore', 'pipe', 'inherit'],
      }),
    );
    let out = '';
    const seen = (prefix: string) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          const line = out.split('\n').find((l) => l.includes(prefix));
          if (line) resolve(line);
        };
        child.stdout!.on('data', check);
        child.once('exit', (code, signal) => reject(new Error(`torch worker exited (${code ?? signal}) before printing ${prefix}`)));
      });
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      process.stdout.write(chunk);
    });
    const serving = seen(' serving ').then(() => undefined);
    const frozen = seen('FROZEN ');
    serving.catch(() => undefined);
    frozen.catch(() => undefined);
    return { child, frozen, serving };
  };

  const killAll = async (): Promise<void> => {
    for (const child of [...children]) await killHard(child);
  };

  return { spawnWorker, spawnFreezingWorker, spawnTorchWorker, killWhenFrozen, killHard, killAll };
}
