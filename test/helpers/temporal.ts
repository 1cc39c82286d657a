/**
 * Per-test-file access to the shared real dev server (started once in global-setup), with workers
 * built exactly as production builds them, over a throwaway blob store.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { createWorkers } from '../../workers/create-workers';
import type { TaskQueueName } from '../../workflows/shared';
import type { RunConfigInput } from '../../src/config/schema';

export { tempStore } from './store';

export function testAddress(): string {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run tests through jest (global-setup starts the server)');
  return address;
}

export async function connectTestEnv(): Promise<TestWorkflowEnvironment> {
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

/** A run small enough for the test suite: seconds, not minutes. */
export function tinyRunConfig(overrides: Partial<RunConfigInput> = {}): RunConfigInput {
  return {
    experiment: 'test-tiny',
    seed: 7,
    task: { trainProblems: 40, evalProblems: 4 },
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 },
    sft: { steps: 4, batchSize: 4, stepsPerActivity: 2, warmupSteps: 1 },
    eval: { everySteps: 0, maxNewTokens: 12 },
    rollout: { maxTurns: 2 },
    timeouts: { heartbeatSec: 10 },
    ...overrides,
  };
}
