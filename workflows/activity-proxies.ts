/**
 * Activity stubs by task queue. Timeouts come from the run config so that a deployment (or a test
 * that kills workers) can pick how fast a dead worker is noticed; retries are explicit everywhere.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { DataActivities } from '../activities/data';
import type { InferenceActivities } from '../activities/inference';
import type { RunRecordActivities } from '../activities/run-records';
import type { TrainingActivities } from '../activities/training';
import type { ToolActivities } from '../activities/tools';
import type { RunConfig } from '../src/config/schema';
import { TASK_QUEUES } from './shared';

/** Failures that no retry can fix: bad config, bad input, model output that cannot be parsed. */
export const NON_RETRYABLE_ERRORS = ['ConfigError', 'BadInputError', 'CalcInputError', 'PlanParseError', 'RemoteEngineRequestError'];

const retry = (maximumAttempts: number): ActivityOptions['retry'] => ({
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  maximumAttempts,
  nonRetryableErrorTypes: NON_RETRYABLE_ERRORS,
});

export function activityProxies(t: RunConfig['timeouts']) {
  const heartbeatTimeout = t.heartbeatSec * 1000;
  return {
    // Builds the dataset in one go without heartbeats, so no heartbeat timeout: a dead worker is
    // noticed at the start-to-close timeout.
    data: proxyActivities<DataActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: '10m',
      retry: retry(5),
    }),
    /** Run state and metrics file: small, local, retried until they land. */
    records: proxyActivities<RunRecordActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: '2m',
      retry: retry(10),
    }),
    training: trainingProxies(t),
    inference: proxyActivities<InferenceActivities>({
      taskQueue: TASK_QUEUES.inference,
      startToCloseTimeout: t.generateSec * 1000,
      heartbeatTimeout,
      retry: retry(10),
    }),
    tools: proxyActivities<ToolActivities>({
      taskQueue: TASK_QUEUES.tools,
      startToCloseTimeout: t.toolSec * 1000,
      retry: retry(3),
    }),
  };
}

/**
 * trainSft and trainGrpo heartbeat between steps and micro-batches, so a killed trainer is noticed
 * after heartbeatSec; initPolicy, publishWeights and checkpointFromRun are short single calls that
 * cannot heartbeat, so they carry no heartbeat timeout (a slow export must not be mistaken for a
 * dead worker), only the start-to-close one.
 */
function trainingProxies(t: RunConfig['timeouts']) {
  const options = { taskQueue: TASK_QUEUES.training, startToCloseTimeout: t.trainSec * 1000, retry: retry(10) };
  const heartbeating = proxyActivities<TrainingActivities>({ ...options, heartbeatTimeout: t.heartbeatSec * 1000 });
  const single = proxyActivities<TrainingActivities>(options);
  return {
    trainSft: heartbeating.trainSft,
    trainGrpo: heartbeating.trainGrpo,
    initPolicy: single.initPolicy,
    publishWeights: single.publishWeights,
    checkpointFromRun: single.checkpointFromRun,
    checkpointFromHf: single.checkpointFromHf,
  } satisfies { [K in keyof TrainingActivities]: unknown };
}
