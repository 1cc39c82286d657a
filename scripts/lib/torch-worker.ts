/**
 * The PyTorch training worker (python/durable_rl_torch, trainer.backend: torch) as a child process of
 * a script: the main job starts it for a torch run, tests and benchmarks start it beside their
 * TypeScript workers. It runs on the project's Python environment (scripts/setup-python.sh) and polls
 * TRAINER_QUEUES.torch on the same server, namespace and blob store as its parent.
 */
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';
import { TRAINER_QUEUES } from '../../workflows/task-queues';
import { pythonBin } from './python-env';
import { startWorkerProcess, type WorkerProcess, type WorkerProcessOptions } from './worker-process';

export const TORCH_PACKAGE_DIR = path.join(REPO_ROOT, 'python');

export interface TorchWorkerOptions {
  address: string;
  namespace: string;
  /** DURABLE_RL_STORE and friends for the worker; default the parent's environment's. */
  env?: Record<string, string>;
  logFile: string;
  /** Another task queue than the backend's (tests give each file its own). */
  taskQueue?: string;
  nice?: number;
}

export function torchWorkerProcessOptions(o: TorchWorkerOptions): WorkerProcessOptions {
  return {
    program: pythonBin(),
    entry: '-m',
    args: ['durable_rl_torch.worker', '--task-queue', o.taskQueue ?? TRAINER_QUEUES.torch],
    // PYTHONUNBUFFERED: its "serving" line must reach the parent at once.
    env: { ...o.env, TEMPORAL_ADDRESS: o.address, TEMPORAL_NAMESPACE: o.namespace, PYTHONPATH: TORCH_PACKAGE_DIR, PYTHONUNBUFFERED: '1' },
    logFile: o.logFile,
    // Importing torch and transformers takes a while on a busy 2-core machine.
    startTimeoutMs: 180_000,
    ...(o.nice ? { nice: o.nice } : {}),
  };
}

export function startTorchWorker(o: TorchWorkerOptions): Promise<WorkerProcess> {
  return startWorkerProcess(torchWorkerProcessOptions(o));
}
