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
import { createWorkers } from '../../workers/create-workers';
import type { TaskQueueName } from '../../workflows/shared';
import { startDevServerOnFreePort } from './dev-server';

export interface LocalStack {
  /** host:port of the dev server, for the Temporal CLI. */
  address: string;
  /** The dev server's process, for CPU accounting in benchmarks. */
  serverPid: number;
  client: Client;
  store: FsBlobStore;
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
}

export async function startLocalStack(opts: LocalStackOptions): Promise<LocalStack> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${opts.label}-`));
  const server = await startDevServerOnFreePort({
    logFile: path.join(tmp, 'server.log'),
    detached: false,
    dynamicConfig: opts.dynamicConfig,
  });
  const native = await NativeConnection.connect({ address: server.address });
  const connection = await Connection.connect({ address: server.address });
  const store = new FsBlobStore(path.join(tmp, 'store'));
  const workers = await createWorkers({ connection: native, queues: opts.queues, store, ...(opts.activityInterceptors ? { activityInterceptors: opts.activityInterceptors } : {}) });
  workers.push(...((await opts.extraWorkers?.(native, store)) ?? []));
  const running = workers.map((w) => w.run());
  return {
    address: server.address,
    serverPid: server.pid,
    client: new Client({ connection }),
    store,
    stop: async () => {
      for (const w of workers) w.shutdown();
      await Promise.all(running);
      await native.close();
      await connection.close();
      await server.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
