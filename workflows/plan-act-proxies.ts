/**
 * Activity stubs for the Plan/Act workflows. generate may go to a per-policy task queue: in dual
 * mode the planner's and the actor's weights can be served by different inference pools.
 */
import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { InferenceActivities } from '../activities/inference';
import type { PlanActJobActivities } from '../activities/plan-act-jobs';
import type { SampleActivities } from '../activities/samples';
import type { ToolActivities } from '../activities/tools';
import type { TrainingActivities } from '../activities/training';
import type { RunConfig } from '../src/config/schema';
import { NON_RETRYABLE_ERRORS } from './activity-proxies';
import { TASK_QUEUES } from './shared';

const retry = (maximumAttempts: number): ActivityOptions['retry'] => ({
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  maximumAttempts,
  nonRetryableErrorTypes: [...NON_RETRYABLE_ERRORS, 'SessionRejected'],
});

/** Calculator attempts; tool metrics report retries = attempts beyond the first. */
export const CALC_MAX_ATTEMPTS = 3;

export function generateProxy(t: RunConfig['timeouts'], taskQueue: string = TASK_QUEUES.inference) {
  return proxyActivities<Pick<InferenceActivities, 'generate'>>({
    taskQueue,
    startToCloseTimeout: `${t.generateSec}s`,
    heartbeatTimeout: `${t.heartbeatSec}s`,
    retry: retry(10),
  }).generate;
}

export function planActProxies(t: RunConfig['timeouts']) {
  return {
    tools: proxyActivities<Pick<ToolActivities, 'calcWithAttempt'>>({
      taskQueue: TASK_QUEUES.tools,
      startToCloseTimeout: `${t.toolSec}s`,
      retry: { ...retry(CALC_MAX_ATTEMPTS), initialInterval: '200ms', maximumInterval: '2s' },
    }),
    samples: proxyActivities<SampleActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: '2m',
      retry: retry(5),
    }),
    jobs: proxyActivities<PlanActJobActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: '1m',
      retry: retry(5),
    }),
    /** Training jobs evaluate their own weights on the inference queue (the embedded engine). */
    evaluation: proxyActivities<Pick<InferenceActivities, 'evaluatePolicy'>>({
      taskQueue: TASK_QUEUES.inference,
      startToCloseTimeout: `${t.generateSec}s`,
      heartbeatTimeout: `${t.heartbeatSec}s`,
      retry: retry(10),
    }),
    training: proxyActivities<Pick<TrainingActivities, 'initPolicy' | 'publishWeights' | 'trainGrpo' | 'checkpointFromRun'>>({
      taskQueue: TASK_QUEUES.training,
      // No heartbeat timeout: initPolicy and publishWeights do not heartbeat.
      startToCloseTimeout: `${t.trainSec}s`,
      retry: retry(10),
    }),
  };
}
