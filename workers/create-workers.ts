/**
 * Builds the Temporal workers for a set of task queues. Entry points (one per queue, plus all.ts)
 * and the tests call this, so every process registers the same activities the same way.
 */
import path from 'node:path';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type ActivityInterceptorsFactory, type WorkerOptions } from '@temporalio/worker';
import { createAgentActivities } from '../activities/agents';
import { createConfigActivities } from '../activities/config';
import { createDataActivities } from '../activities/data';
import { createGridActivities } from '../activities/grid';
import { createHorizonSampleActivities } from '../activities/horizon-samples';
import { createPlanActJobActivities } from '../activities/plan-act-jobs';
import { createSampleActivities } from '../activities/samples';
import { createRunRecordActivities } from '../activities/run-records';
import { createInferenceActivities, type InferenceActivities } from '../activities/inference';
import { createToolActivities, type ToolActivities } from '../activities/tools';
import { createCallExchangeActivities } from '../activities/call-exchange';
import { createTrainingActivities } from '../activities/training';
import { createTrackingActivities } from '../activities/tracking';
import { createTensorboardActivities } from '../activities/tensorboard';
import { initTfBackend } from '../src/model/backend';
import { DATA_DIR, REPO_ROOT, defaultRunsDir } from '../src/paths';
import type { BlobStore } from '../src/store/blob-store';
import { openStore, parseStoreSpec, storeSettingsFromEnv, type StoreSpec } from '../src/store/store-spec';
import { TASK_QUEUES, type TaskQueueName } from '../workflows/task-queues';
import { WORKER_DEFAULTS } from './worker-config';

export interface WorkerSetup {
  connection: NativeConnection;
  queues: readonly TaskQueueName[];
  store: BlobStore;
  namespace?: string;
  /** The identity every worker polls under (workers/attempt-journal.ts); default the SDK's, <pid>@<host>. */
  identity?: string;
  /** Pre-built workflow bundle (npm run build writes dist/workflow-bundle.js). */
  workflowBundlePath?: string;
  /** Concurrent generate activities; the engine batches them and runs one batch at a time per device. */
  inferenceConcurrency?: number;
  /** Training activities at once: one per device. */
  trainingSlots?: number;
  /** Orchestration activities at once (default WORKER_DEFAULTS.concurrency). */
  orchestrationConcurrency?: number;
  /** Tool and agent activities at once (default WORKER_DEFAULTS.concurrency). */
  toolsConcurrency?: number;
  /** Activity interceptors for every queue's worker (the metrics endpoint's, see workers/metrics). */
  activityInterceptors?: ActivityInterceptorsFactory[];
  /**
   * What the orchestration worker runs as local activities (rollout.batchRequests 'local',
   * workflows/episode-calls.ts); default: this process's own generate and calcWithAttempt, the same
   * instances its inference and tools workers run, when it hosts those queues.
   */
  localCalls?: Partial<LocalCallActivities>;
  /** Where runs' metrics files and curves go (default .data/runs, or DURABLE_RL_RUNS). */
  runsDir?: string;
  /** The Temporal Web UI that a run's MLflow tag links to (tracking.mlflow); absent: no link. */
  temporalUiUrl?: string;
}

/** The calls rollout.batchRequests 'local' makes as local activities of the orchestration worker. */
export type LocalCallActivities = Pick<InferenceActivities, 'generate'> & Pick<ToolActivities, 'calcWithAttempt'>;

/** Local activities at once on one orchestration worker: an exchange per episode workflow, or (histories recorded before exchanges) two per episode for 1,024 episodes, and room. */
const MAX_LOCAL_CALLS = 4096;
/** Workflow tasks open at once on one orchestration worker: one per episode workflow of 1,024 episodes in groups of 4, and room. */
const MAX_OPEN_WORKFLOW_TASKS = 1024;

export const DEFAULT_WORKFLOW_BUNDLE = path.join(REPO_ROOT, 'dist', 'workflow-bundle.js');

export async function createWorkers(setup: WorkerSetup): Promise<Worker[]> {
  const { connection, store } = setup;
  const namespace = setup.namespace ?? WORKER_DEFAULTS.namespace;
  /** The options every worker shares; each queue adds what it runs and how much at once. */
  const create = (queue: TaskQueueName, options: Omit<WorkerOptions, 'connection' | 'namespace' | 'taskQueue'>): Promise<Worker> =>
    Worker.create({ connection, namespace, taskQueue: TASK_QUEUES[queue], ...(setup.identity ? { identity: setup.identity } : {}), ...(setup.activityInterceptors ? { interceptors: { activity: setup.activityInterceptors } } : {}), ...options });
  // One instance per queue's activities, shared with the orchestration worker's local calls.
  const inference = setup.queues.includes('inference') ? createInferenceActivities({ store }) : undefined;
  const tools = setup.queues.includes('tools') ? createToolActivities() : undefined;
  const localCalls: Partial<LocalCallActivities> = setup.localCalls ?? {
    ...(inference ? { generate: inference.generate } : {}),
    ...(tools ? { calcWithAttempt: tools.calcWithAttempt } : {}),
  };
  const workers: Worker[] = [];
  for (const queue of setup.queues) {
    switch (queue) {
      case 'orchestration':
        workers.push(
          await create(queue, {
            workflowBundle: { codePath: setup.workflowBundlePath ?? DEFAULT_WORKFLOW_BUNDLE },
            activities: {
              ...createConfigActivities(),
              // Agent episodes' recorded timelines become samples here, next to the blob store.
              ...createAgentActivities({ store }),
              ...createDataActivities({ store }),
              ...createSampleActivities({ store }),
              ...createHorizonSampleActivities({ store }),
              ...createRunRecordActivities({ store, runsDir: setup.runsDir ?? defaultRunsDir() }),
              // tracking.mlflow: the run's points, status and artifacts in MLflow.
              ...createTrackingActivities({ store, ...(setup.temporalUiUrl ? { temporalUiUrl: setup.temporalUiUrl } : {}) }),
              // tracking.tensorboard: the run's event file.
              ...createTensorboardActivities(),
              // Plan/Act jobs arrive at their rollout session through this client (update-with-start).
              ...createPlanActJobActivities({ store, client: new Client({ connection, namespace }) }),
              // rollout.batchRequests 'local': the episodes' calls, run in this process (a local
              // activity per call in histories recorded before exchanges, and exchanges since).
              ...localCalls,
              ...createCallExchangeActivities({
                ...(localCalls.generate ? { generate: localCalls.generate } : {}),
                ...(localCalls.calcWithAttempt ? { calc: async (expression: string) => (await localCalls.calcWithAttempt!({ expression })).value } : {}),
              }),
            },
            // Local calls wait on the engine, not on this thread: as many at once as episodes make them.
            maxConcurrentLocalActivityExecutions: MAX_LOCAL_CALLS,
            // A workflow whose local calls are in flight holds its workflow task open (up to 80% of
            // the task timeout) and a slot with it: the SDK's 40 slots would let 40 episode
            // workflows run and the rest wait. The workflow thread still runs one activation at a time.
            maxConcurrentWorkflowTaskExecutions: MAX_OPEN_WORKFLOW_TASKS,
            // Light work (datasets, samples, session arrivals); many Plan/Act episodes write samples at once.
            maxConcurrentActivityTaskExecutions: setup.orchestrationConcurrency ?? WORKER_DEFAULTS.concurrency.orchestration,
          }),
        );
        break;
      case 'inference':
        workers.push(await create(queue, { activities: inference!, maxConcurrentActivityTaskExecutions: setup.inferenceConcurrency ?? WORKER_DEFAULTS.concurrency.inference }));
        break;
      case 'training':
        // Load tfjs's backend before polling: a cold load inside a heartbeating activity's first
        // stage counts against timeouts.heartbeatSec.
        await initTfBackend();
        workers.push(await create(queue, { activities: createTrainingActivities({ store }), maxConcurrentActivityTaskExecutions: setup.trainingSlots ?? WORKER_DEFAULTS.concurrency.training }));
        break;
      case 'tools':
        // Tools, and the outside agents (agentRollout) that call the gateway and run their own tools.
        // The grid world's environment (horizon episodes) is a tool like the calculator.
        workers.push(await create(queue, { activities: { ...tools!, ...createGridActivities(), ...createAgentActivities({ store }) }, maxConcurrentActivityTaskExecutions: setup.toolsConcurrency ?? WORKER_DEFAULTS.concurrency.tools }));
        break;
    }
  }
  return workers;
}

export { defaultRunsDir };

/** The blob store named by DURABLE_RL_STORE and the DURABLE_RL_S3_* variables (src/store/store-spec.ts); default .data/store. */
export function defaultStoreSpec(): StoreSpec {
  return parseStoreSpec(storeSettingsFromEnv(), path.join(DATA_DIR, 'store'));
}

export function defaultStore(): BlobStore {
  return openStore(defaultStoreSpec());
}
