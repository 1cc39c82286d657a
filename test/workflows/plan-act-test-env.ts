/**
 * A Temporal namespace of its own for a Plan/Act test file, on the shared dev server.
 *
 * Every test file runs real workers for the project's task queues. In one namespace, a workflow
 * started by one file can have its activities executed by another file's workers, which write to
 * another blob store; a namespace per file keeps each file's tasks with its own workers.
 */
import { msToTs } from '@temporalio/common/lib/time';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { createWorkers } from '../../workers/create-workers';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/search-attributes';
import { ALL_QUEUES, tempStore, testAddress, uniqueId } from '../helpers/temporal';

const INDEXED = temporal.api.enums.v1.IndexedValueType;
const TYPES: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  Keyword: INDEXED.INDEXED_VALUE_TYPE_KEYWORD,
  Int: INDEXED.INDEXED_VALUE_TYPE_INT,
  Bool: INDEXED.INDEXED_VALUE_TYPE_BOOL,
};

export interface PlanActTestEnv {
  env: TestWorkflowEnvironment;
  namespace: string;
  store: FsBlobStore;
  /** Starts a worker in this namespace (an oracle inference queue, say); stopped by stop(). */
  addWorker(options: Omit<Parameters<typeof Worker.create>[0], 'connection' | 'namespace'>): Promise<void>;
  stop(): Promise<void>;
}

export async function planActTestEnv(label: string): Promise<PlanActTestEnv> {
  const namespace = uniqueId(label);
  const bootstrap = await TestWorkflowEnvironment.createFromExistingServer({ address: testAddress() });
  try {
    await bootstrap.connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
    const searchAttributes = Object.fromEntries(Object.entries(SEARCH_ATTRIBUTE_TYPES).map(([name, type]) => [name, TYPES[type]!]));
    // A namespace just registered can take a moment to be known to every service.
    for (let attempt = 0; ; attempt++) {
      try {
        await bootstrap.connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
        break;
      } catch (err) {
        if (attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  } finally {
    await bootstrap.teardown();
  }

  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: testAddress(), namespace });
  const store = tempStore(label);
  const workers = await createWorkers({ connection: env.nativeConnection, queues: ALL_QUEUES, store, namespace });
  const running = workers.map((w) => w.run());
  return {
    env,
    namespace,
    store,
    async addWorker(options) {
      const w = await Worker.create({ ...options, connection: env.nativeConnection, namespace });
      workers.push(w);
      running.push(w.run());
    },
    async stop() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running);
      await env.teardown();
    },
  };
}
