/**
 * Production workers as separate OS processes for crash tests: started against a test's namespace
 * and blob store, optionally built to freeze inside an activity (test/fixtures/freezing-worker.ts),
 * and SIGKILLed. Every process started here is killed by killAll().
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';
import { testAddress, type TestEnv } from './temporal';

export type WorkerEntry = 'trainer' | 'inference';
const QUEUE_OF: Record<WorkerEntry, string> = { trainer: 'training', inference: 'inference' };

export interface FreezingWorker {
  child: ChildProcess;
  /** Resolves with the FROZEN line once the process is stuck inside the activity. */
  frozen: Promise<string>;
}

export function workerProcesses(ctx: Pick<TestEnv, 'namespace' | 'store'>) {
  const children = new Set<ChildProcess>();
  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    ...process.env,
    TEMPORAL_ADDRESS: testAddress(),
    TEMPORAL_NAMESPACE: ctx.namespace,
    DURABLE_RL_STORE: ctx.store.root,
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

  /** The production worker entry (dist/workers/<entry>.js). */
  const spawnWorker = (entry: WorkerEntry): ChildProcess =>
    track(spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', `${entry}.js`)], { env: env(), stdio: ['ignore', 'inherit', 'inherit'] }));

  /** The same worker, frozen at `freezeAt` (<activity type>:<heartbeat field or start>:<value>). */
  const spawnFreezingWorker = (entry: WorkerEntry, freezeAt: string): FreezingWorker => {
    const script = path.join(REPO_ROOT, 'dist', 'test', 'fixtures', 'freezing-worker.js');
    const child = track(spawn(process.execPath, [script, QUEUE_OF[entry]], { env: env({ DURABLE_RL_FREEZE_AT: freezeAt }), stdio: ['ignore', 'pipe', 'inherit'] }));
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

  const killAll = async (): Promise<void> => {
    for (const child of [...children]) await killHard(child);
  };

  return { spawnWorker, spawnFreezingWorker, killWhenFrozen, killHard, killAll };
}
