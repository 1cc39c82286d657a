/**
 * Per-test-file access to the shared real dev server (started once in global-setup), with workers
 * built exactly as production builds them, over a throwaway blob store.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, type Worker } from '@temporalio/worker';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { createWorkers } from '../../workers/create-workers';
import type { TaskQueueName } from '../../workflows/shared';

export { tempStore } from './store';

export function testAddress(): string {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run tests through jest (global-setup starts the server)');
  return address;
}

let runtimeInstalled = false;

export async function connectTestEnv(): Promise<TestWorkflowEnvironment> {
  if (!runtimeInstalled) {
    runtimeInstalled = true;
    try {
      // Worker state changes at INFO drown the test output; warnings and errors still show.
      Runtime.install({ logger: new DefaultLogger('WARN') });
    } catch {
      // Another test file in this jest worker process installed it already.
    }
  }
  return TestWorkflowEnvironment.createFromExistingServer({ address: testAddress() });
}


export const ALL_QUEUES: TaskQueueName[] = ['orchestration', 'inference', 'training', 'tools'];

export async function startWorkers(env: TestWorkflowEnvironment, store: FsBlobStore, queues = ALL_QUEUES): Promise<{ workers: Worker[]; stop(): Promise<void> }> {
  const workers = await createWorkers({ connection: env.nativeConnection, queues, store });
  const running = workers.map((w) => w.run());
  return {
    workers,
    stop: async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running);
    },
  };
}

let counter = 0;
/** Workflow ids unique across test files and reruns against the same server. */
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export { tinyRunConfig } from '../../scripts/lib/scenarios';
