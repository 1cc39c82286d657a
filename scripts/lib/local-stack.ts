/**
 * A throwaway Temporal stack in this process, for scripts that run real workflows end to end
 * (history recorder, benchmarks): an in-memory dev server on a free port, the project's workers for
 * the given queues over a temporary blob store, and a client. stop() tears all of it down.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type ActivityInterceptorsFactory, type Worker } from '@temporalio/worker';
import { FsBlobStore } from '../../src/store/fs-blob-store';
import { createWorkers, type WorkerSetup } from '../../workers/create-workers';
import type { TaskQueueName } from '../../workflows/task-queues';
import { startDevServerOnFreePort } from './dev-server';
import { startWorkerProcess } from './worker-process';
import { reniceProcess } from './niced';

export interface LocalStack {
  /** host:port of the dev server, for the Temporal CLI. */
  address: string;
  /** The dev server's process, for CPU accounting in benchmarks. */
  serverPid: number;
  /** With workerProcesses: the process of each queue that has one of its own, likewise. */
  workerPids: Partial<Record<TaskQueueName, number>>;
  client: Client;
  store: FsBlobStore;
  /** With workerProcesses: resolves, describing how, if one of them ends on its own. */
  workerExited: Promise<string>;
  stop(): Promise<void>;
}

export interface LocalStackOptions {
  /** Names the temporary directory (server log and blob store). */
  label: string;
  queues: readonly TaskQueueName[];
  /** Workers beyond the project's own (an oracle inference queue, say), on the same connection and store. */
  extraWorkers?: (connection: NativeConnection, store: FsBlobStore) => Promise<Worker[]>;
  /** Dynamic config on top of the project's dev-server settings. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Around every activity of the project's workers (a benchmark's simulated latency, say). */
  activityInterceptors?: ActivityInterceptorsFactory[];
  /** What this process's orchestration worker runs for rollout.batchRequests 'local' (the recorder's oracle); default its own inference and tools. */
  localCalls?: (store: FsBlobStore) => WorkerSetup['localCalls'];
  /**
   * Run each queue's workers in a process of its own, as a deployment does (workers/<queue>.ts),
   * instead of in this one: `entry` is the worker script (given the queue as its argument), `env`
   * added to its environment. The trainer's tfjs work is synchronous JavaScript that holds its
   * process's event loop for the length of each op; in a process of its own it cannot hold up the
   * inference worker's token loop. activityInterceptors reach only the queues left in this process.
   */
  workerProcesses?: {
    /** The queues that get processes of their own (default: every queue); the rest run in this process. */
    queues?: readonly TaskQueueName[];
    entry: string;
    /** Node flags before the entry (a benchmark's --cpu-prof). */
    nodeArgs?: string[];
    env?: Record<string, string>;
    /** Niceness per queue's process (1-19, absent: 0); `serverNice` likewise for the dev server. */
    nice?: Partial<Record<TaskQueueName, number>>;
  };
  serverNice?: number;
  /**
   * Once the worker processes run, this process's threads (and those it starts later: its own
   * workers') run at this niceness (1-19), so its queues yield the CPU to the worker processes:
   * bench:async's trainer-apart layout with --nice, as the main job runs asynchronous RL.
   */
  selfNice?: number;
}

export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${opts.label}-`));
  const server = await startDevServerOnFreePort({
    logFile: path.join(tmp, 'server.log'),
    detached: false,
    dynamicConfig: opts.dynamicConfig,
    ...(opts.serverNice ? { nice: opts.serverNice } : {}),
  });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const store = new FsBlobStore(path.join(tmp, 'store'));
  const { workerProcesses } = opts;
  const apart = workerProcesses ? (workerProcesses.queues ?? opts.queues) : [];
  const inProcess = opts.queues.filter((q) => !apart.includes(q));
  const children = workerProcesses
    ? await Promise.all(
        apart.map((q) =>
          startWorkerProcess({
            entry: workerProcesses.entry,
            args: [q],
            ...(workerProcesses.nodeArgs ? { programArgs: workerProcesses.nodeArgs } : {}),
            env: { ...workerProcesses.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default', DURABLE_RL_STORE: store.root },
            logFile: path.join(tmp, `worker-${q}.log`),
            ...(workerProcesses.nice?.[q] ? { nice: workerProcesses.nice[q] } : {}),
          }),
        ),
      )
    : [];
  if (opts.selfNice) reniceProcess(process.pid, opts.selfNice);
  let died = false;
  const workerExited = Promise.race(children.map((c) => c.exited)).then((why) => {
    died = true;
    return why;
  });
  // The interceptors reach this process's workers only (functions do not cross processes).
  const workers: Worker[] =
    inProcess.length === 0
      ? []
      : await createWorkers({ connection: native, queues: inProcess, store, ...(opts.activityInterceptors ? { activityInterceptors: opts.activityInterceptors } : {}), ...(opts.localCalls ? { localCalls: opts.localCalls(store) } : {}) });
  workers.push(...((await opts.extraWorkers?.(native, store)) ?? []));
  const running = workers.map((w) => w.run());
  return {
    address: server.address,
    serverPid: server.pid,
    workerPids: Object.fromEntries(apart.map((q, i) => [q, children[i]!.pid])),
    client: new Client({ connection }),
    store,
    workerExited,
    stop: async () => {
      for (const w of workers) w.shutdown();
      await Promise.all([...running, ...children.map((c) => c.stop())]);
      await native.close();
      await connection.close();
      await server.stop();
      // The dead worker's log is in there.
      if (died) console.error(`kept ${tmp}: a worker process ended on its own`);
      else fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
