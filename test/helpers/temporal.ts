/**
 * Each workflow test file gets a namespace of its own on the shared real dev server (started once in
 * global-setup), with workers built exactly as production builds them over a throwaway blob store.
 * One namespace per file matters: in a shared namespace, a workflow started by one file could have
 * its activities run by another file's workers, which write to another blob store.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker, type ActivityInterceptorsFactory } from '@temporalio/worker';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { createWorkers, type WorkerSetup } from '../../workers/create-workers';
import { ensureNamespaceReady } from '../../workers/namespace-setup';
import { TASK_QUEUES, type TaskQueueName } from '../../workflows/task-queues';
import { tempStore } from './store';
import { tinyRunConfig } from '../../scripts/lib/scenarios';

export { tempStore } from './store';
export { tinyRunConfig } from '../../scripts/lib/scenarios';

/** A tiny run with an RL phase: 2 steps of 2 prompts x 2 episodes, no evaluations during RL, no test evaluation. */
export const tinyRlConfig = (rl: Record<string, unknown> = {}) =>
  tinyRunConfig({
    task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 0 } },
    eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8 },
    rollout: { maxTurns: 2 },
    rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16, ppoEpochs: 2, miniBatches: 2, ...rl },
  });


export const ALL_QUEUES: TaskQueueName[] = ['orchestration', 'inference', 'training', 'tools'];

export function testAddress(): string {
  const address = process.env.TEMPORAL_TEST_ADDRESS;
  if (!address) throw new Error('TEMPORAL_TEST_ADDRESS is not set: run tests through jest (global-setup starts the server)');
  return address;
}

let counter = 0;
/** Ids unique across test files and reruns against the same server. */
export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

let runtimeInstalled = false;
function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // Worker state changes at INFO drown the test output; warnings and errors still show.
    Runtime.install({ logger: new DefaultLogger('WARN') });
  } catch {
    // Another test file in this jest worker process installed it already.
  }
}

/** Registers a fresh namespace with the project's search attributes (as the main job makes sure of its own). */
export async function createTestNamespace(label: string): Promise<string> {
  const namespace = uniqueId(label);
  const connection = await Connection.connect({ address: testAddress() });
  try {
    await ensureNamespaceReady(connection, namespace, { address: testAddress(), create: true, retentionDays: 1 });
  } finally {
    await connection.close();
  }
  return namespace;
}

export interface TestEnv {
  env: TestWorkflowEnvironment;
  namespace: string;
  store: FsBlobStore;
  /** Where this file's runs write their metrics files and curves. */
  runsDir: string;
  /** Starts trainingRun with `config` under a fresh id beginning with `idPrefix`. */
  startTrainingRun(idPrefix: string, config: unknown): Promise<{ workflowId: string; handle: WorkflowHandleWithFirstExecutionRunId }>;
  /** Starts another worker in this namespace (an oracle inference queue, say); stopped by stop(). */
  addWorker(options: Omit<Parameters<typeof Worker.create>[0], 'connection' | 'namespace'>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A namespace, a client, and in-process workers for `queues` (all four by default); activity
 * interceptors put a test's chosen delays or holds around the real activities.
 */
export async function testEnv(label: string, queues: readonly TaskQueueName[] = ALL_QUEUES, opts: { activityInterceptors?: ActivityInterceptorsFactory[]; localCalls?: WorkerSetup['localCalls'] } = {}): Promise<TestEnv> {
  quietRuntime();
  const namespace = await createTestNamespace(label);
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: testAddress(), namespace });
  const store = tempStore(label);
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${label}-runs-`));
  const workers = await createWorkers({ connection: env.nativeConnection, queues, store, namespace, runsDir, ...(opts.activityInterceptors ? { activityInterceptors: opts.activityInterceptors } : {}), ...(opts.localCalls ? { localCalls: opts.localCalls } : {}) });
  const running = workers.map((w) => w.run());
  return {
    env,
    namespace,
    store,
    runsDir,
    async startTrainingRun(idPrefix, config) {
      const workflowId = uniqueId(idPrefix);
      const handle = await env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [config] });
      return { workflowId, handle };
    },
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
