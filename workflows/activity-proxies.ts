/**
 * Every activity's options, declared once: task queue, timeouts, heartbeat and the errors no retry
 * can fix, each activity under one option set. Timeouts come from the run config so that a
 * deployment (or a test that kills workers) can pick how fast a dead worker is noticed, and all are
 * given in seconds, as the config's *Sec keys are (`seconds`); retries are explicit everywhere. generate may go to a
 * per-policy task queue: in dual mode the planner's and the actor's weights can be served by
 * different inference pools.
 */
import { patched, proxyActivities, proxyLocalActivities, type ActivityOptions } from '@temporalio/workflow';
import type { AgentActivities } from '../activities/agents';
import type { ConfigActivities } from '../activities/config';
import type { DataActivities } from '../activities/data';
import type { GridActivities } from '../activities/grid';
import type { HorizonSampleActivities } from '../activities/horizon-samples';
import type { PlanActJobActivities } from '../activities/plan-act-jobs';
import type { SampleActivities } from '../activities/samples';
import type { InferenceActivities } from '../activities/inference';
import type { RunRecordActivities } from '../activities/run-records';
import type { TrainingActivities } from '../activities/training';
import type { ToolActivities } from '../activities/tools';
import type { TrackingActivities } from '../activities/tracking';
import type { TensorboardActivities } from '../activities/tensorboard';
import type { CallExchangeActivities, ExchangeCallsInput, ExchangeRetry } from '../activities/call-exchange';
import { msToNumber } from '@temporalio/common';
import type { RunConfig } from '../src/config/schema';
import { TASK_QUEUES, TRAINER_QUEUES } from './task-queues';

/** Failures that no retry can fix: bad config, bad input, model output that cannot be parsed. */
export const NON_RETRYABLE_ERRORS = ['ConfigError', 'BadInputError', 'CalcInputError', 'PlanParseError', 'RemoteEngineRequestError'];

/**
 * A timeout of `n` seconds, as the milliseconds the SDK reads a number as: one unit for every
 * activity option here (a number, unlike a duration string, takes any positive *Sec the config allows).
 */
const seconds = (n: number): number => n * 1000;

const retry = (maximumAttempts: number): ActivityOptions['retry'] => ({
  initialInterval: '1s',
  backoffCoefficient: 2,
  maximumInterval: '30s',
  maximumAttempts,
  nonRetryableErrorTypes: NON_RETRYABLE_ERRORS,
});

/** Config resolution runs before any timeout is known, so its options are fixed. */
export const configProxies = proxyActivities<ConfigActivities>({
  taskQueue: TASK_QUEUES.orchestration,
  startToCloseTimeout: seconds(60),
  retry: { ...retry(10), nonRetryableErrorTypes: ['ConfigError'] },
});

/** `trainer`: the run's trainer section (absent: the tfjs trainer), which picks the training queue. */
export function activityProxies(t: RunConfig['timeouts'], trainer?: RunConfig['trainer']) {
  const heartbeatTimeout = seconds(t.heartbeatSec);
  return {
    // Builds the dataset in one go without heartbeats, so no heartbeat timeout: a dead worker is
    // noticed at the start-to-close timeout.
    data: proxyActivities<DataActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(600),
      retry: retry(5),
    }),
    /** Run state and metrics file: small, local, retried until they land. */
    records: proxyActivities<RunRecordActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(120),
      retry: retry(10),
    }),
    training: trainingProxies(t, trainer),
    inference: proxyActivities<InferenceActivities>({
      taskQueue: TASK_QUEUES.inference,
      startToCloseTimeout: seconds(t.generateSec),
      heartbeatTimeout,
      retry: retry(10),
    }),
    tools: proxyActivities<ToolActivities>({
      taskQueue: TASK_QUEUES.tools,
      startToCloseTimeout: seconds(t.toolSec),
      retry: retry(3),
    }),
  };
}

/**
 * Every training activity heartbeats: trainSft and trainGrpo between steps and micro-batches, the
 * others between reading, decoding/exporting and storing, so a killed trainer is noticed after
 * heartbeatSec. publishWeights and the starting checkpoints (initPolicy, checkpointFromRun/FromHf)
 * had no heartbeat timeout at first, only trainSec (an hour by default): a training worker
 * SIGKILLed while publishing stalled bench:chaos's smoke test that long. Histories recorded before
 * keep the old options, behind patched() — called at the activity's call, so the marker goes only
 * into histories that schedule it.
 *
 * The trainer backend (trainer.backend) picks the task queue (TRAINER_QUEUES: the tfjs workers' or
 * the torch worker's), and a run with a trainer section sends it along with every input that loads
 * or makes a policy, so the torch worker knows the device, dtype and LoRA settings. A run without one
 * (every run recorded before the key) schedules exactly what it did.
 */
function trainingProxies(t: RunConfig['timeouts'], trainer?: RunConfig['trainer']) {
  const options = { taskQueue: TRAINER_QUEUES[trainer?.backend ?? 'tfjs'], startToCloseTimeout: seconds(t.trainSec), retry: retry(10) };
  const heartbeating = proxyActivities<TrainingActivities>({ ...options, heartbeatTimeout: seconds(t.heartbeatSec) });
  const single = proxyActivities<TrainingActivities>(options);
  const startOptions = () => (patched('start-checkpoint-heartbeat') ? heartbeating : single);
  const withTrainer = <I extends object>(input: I): I => (trainer ? { ...input, trainer } : input);
  type Input<K extends keyof TrainingActivities> = Parameters<TrainingActivities[K]>[0];
  return {
    trainSft: (input: Input<'trainSft'>) => heartbeating.trainSft(withTrainer(input)),
    trainGrpo: (input: Input<'trainGrpo'>) => heartbeating.trainGrpo(withTrainer(input)),
    initPolicy: (input: Input<'initPolicy'>) => startOptions().initPolicy(withTrainer(input)),
    publishWeights: (input: Input<'publishWeights'>) => (patched('publish-weights-heartbeat') ? heartbeating : single).publishWeights(input),
    checkpointFromRun: (input: Input<'checkpointFromRun'>) => startOptions().checkpointFromRun(withTrainer(input)),
    checkpointFromHf: (input: Input<'checkpointFromHf'>) => startOptions().checkpointFromHf(withTrainer(input)),
  } satisfies { [K in keyof TrainingActivities]: unknown };
}

/**
 * MLflow logging (tracking.mlflow; workflows/training-run/tracker.ts). Opening the run at the start
 * is waited on: a tracker refused then refuses the run (ConfigError). Logging and status are not
 * waited on by training: retried without limit, with backoff up to a minute, while the tracker is
 * down, until it refuses a request no retry changes (TrackerRefused); the workflow waits for them,
 * bounded, only at its end. So are the baselines' child runs and the run's artifacts. A killed
 * worker's write is noticed by its heartbeat after 20 s.
 */
export function trackingProxies() {
  const nonRetryableErrorTypes = [...NON_RETRYABLE_ERRORS, 'TrackerRefused'];
  const background = proxyActivities<TrackingActivities>({
    taskQueue: TASK_QUEUES.orchestration,
    startToCloseTimeout: '1m',
    heartbeatTimeout: '20s',
    retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', nonRetryableErrorTypes },
  });
  return {
    open: proxyActivities<TrackingActivities>({ taskQueue: TASK_QUEUES.orchestration, startToCloseTimeout: '1m', retry: { ...retry(5), nonRetryableErrorTypes } }).openTrackingRun,
    logTracking: background.logTracking,
    setTrackingStatus: background.setTrackingStatus,
    openChildRun: background.openTrackingChildRun,
    logArtifacts: background.logTrackingArtifacts,
  };
}

/**
 * TensorBoard event files (tracking.tensorboard; workflows/tensorboard-log.ts): opening the run's
 * folder at the start is waited on (a folder refused then refuses the run); writes are not waited on
 * by training, one at a time, retried without limit with backoff up to a minute.
 */
export function tensorboardProxies() {
  return {
    open: proxyActivities<TensorboardActivities>({ taskQueue: TASK_QUEUES.orchestration, startToCloseTimeout: '1m', retry: { ...retry(5), nonRetryableErrorTypes: NON_RETRYABLE_ERRORS } }).openTensorboard,
    write: proxyActivities<TensorboardActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: '1m',
      heartbeatTimeout: '20s',
      retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '1m', nonRetryableErrorTypes: NON_RETRYABLE_ERRORS },
    }).writeTensorboard,
  };
}

/** The Plan/Act workflows' retries also stop at a session's refusal (a rollout it cannot join). */
const planActRetry = (maximumAttempts: number): ActivityOptions['retry'] => ({
  ...retry(maximumAttempts),
  nonRetryableErrorTypes: [...NON_RETRYABLE_ERRORS, 'SessionRejected'],
});

/** Calculator attempts; tool metrics report retries = attempts beyond the first. */
export const CALC_MAX_ATTEMPTS = 3;

/** generate's attempts, as an activity, a local activity or a call of an exchange. */
const GENERATE_MAX_ATTEMPTS = 10;

/** The calculator's retries, as an activity or a local one: quick, few, stopping at a session's refusal. */
const calcRetry = (): ActivityOptions['retry'] => ({ ...planActRetry(CALC_MAX_ATTEMPTS), initialInterval: '200ms', maximumInterval: '2s' });

/** generate's options: the rollout's timeouts, retries until the session refuses. */
function generateOptions(t: RunConfig['timeouts'], taskQueue: string): ActivityOptions {
  return { taskQueue, startToCloseTimeout: seconds(t.generateSec), heartbeatTimeout: seconds(t.heartbeatSec), retry: planActRetry(GENERATE_MAX_ATTEMPTS) };
}

export function generateProxy(t: RunConfig['timeouts'], taskQueue: string = TASK_QUEUES.inference) {
  return proxyActivities<Pick<InferenceActivities, 'generate'>>(generateOptions(t, taskQueue)).generate;
}

/** generateBatch (workflows/request-batcher.ts), with generate's options. */
export function generateBatchProxy(t: RunConfig['timeouts'], taskQueue: string = TASK_QUEUES.inference) {
  return proxyActivities<Pick<InferenceActivities, 'generateBatch'>>(generateOptions(t, taskQueue)).generateBatch;
}

/**
 * rollout.batchRequests 'local': generate and the calculator as local activities of the worker that
 * runs the episode's workflow task (workflows/episode-calls.ts), with the options their activities
 * have, less what a local activity cannot do (a task queue, heartbeats).
 */
export function localCallProxies(t: RunConfig['timeouts']) {
  return {
    generate: proxyLocalActivities<Pick<InferenceActivities, 'generate'>>({ startToCloseTimeout: seconds(t.generateSec), retry: planActRetry(GENERATE_MAX_ATTEMPTS) }).generate,
    calcWithAttempt: proxyLocalActivities<Pick<ToolActivities, 'calcWithAttempt'>>({
      startToCloseTimeout: seconds(t.toolSec),
      retry: calcRetry(),
    }).calcWithAttempt,
  };
}

/** An exchange with no reply comes back after this long, and the workflow exchanges again (ms). */
export const EXCHANGE_MAX_WAIT_MS = 60_000;

/**
 * rollout.batchRequests 'local' with coalesced replies (workflows/call-exchange.ts): the exchange
 * local activity, and the retry policies its calls get in the worker, which are generate's and the
 * calculator's own (attempts, backoff, non-retryable types; an attempt's limit is their timeout).
 */
export function exchangeProxy(t: RunConfig['timeouts']): { exchangeCalls: CallExchangeActivities['exchangeCalls']; retry: ExchangeCallsInput['retry'] } {
  return {
    exchangeCalls: proxyLocalActivities<CallExchangeActivities>({
      // An exchange waits at most EXCHANGE_MAX_WAIT_MS for a first reply, then its window; retried when the worker's side fails.
      startToCloseTimeout: EXCHANGE_MAX_WAIT_MS + 60_000,
      retry: retry(GENERATE_MAX_ATTEMPTS),
    }).exchangeCalls,
    retry: {
      generate: exchangeRetry(planActRetry(GENERATE_MAX_ATTEMPTS), seconds(t.generateSec)),
      calc: exchangeRetry(calcRetry(), seconds(t.toolSec)),
    },
  };
}

function exchangeRetry(r: ActivityOptions['retry'], attemptTimeoutMs: number): ExchangeRetry {
  return {
    maximumAttempts: r!.maximumAttempts!,
    initialIntervalMs: msToNumber(r!.initialInterval!),
    backoffCoefficient: r!.backoffCoefficient!,
    maximumIntervalMs: msToNumber(r!.maximumInterval!),
    attemptTimeoutMs,
    nonRetryableErrorTypes: r!.nonRetryableErrorTypes!,
  };
}

export function planActProxies(t: RunConfig['timeouts'], trainer?: RunConfig['trainer']) {
  return {
    tools: proxyActivities<Pick<ToolActivities, 'calcWithAttempt' | 'calcBatch'>>({
      taskQueue: TASK_QUEUES.tools,
      startToCloseTimeout: seconds(t.toolSec),
      retry: calcRetry(),
    }),
    samples: proxyActivities<SampleActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(120),
      retry: planActRetry(5),
    }),
    jobs: proxyActivities<PlanActJobActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(60),
      retry: planActRetry(5),
    }),
    /** Training jobs evaluate their own weights (evaluatePolicy) with trainingRun's inference options. */
    inference: activityProxies(t).inference,
    /** The run-id claim, as trainingRun makes it. */
    records: activityProxies(t).records,
    // trainingRun's own training options: trainGrpo heartbeats, so a killed trainer is noticed after
    // heartbeatSec, not after trainSec.
    training: trainingProxies(t, trainer),
  };
}

/** The outside agent of agentRollout (on the tools queue or the input's agentQueue), and its samples. */
export function agentProxies(t: RunConfig['timeouts'], agentQueue: string = TASK_QUEUES.tools, agentTimeoutSec = 120) {
  return {
    // The agent heartbeats while it runs, so a killed tools worker is noticed in 30 s, not at the timeout.
    runAgentCommand: proxyActivities<AgentActivities>({
      taskQueue: agentQueue,
      startToCloseTimeout: seconds(agentTimeoutSec + 60),
      heartbeatTimeout: seconds(30),
      retry: { ...retry(3), nonRetryableErrorTypes: [...NON_RETRYABLE_ERRORS, 'AgentOutputError', 'AgentCommandError'] },
    }).runAgentCommand,
    runAgentEpisode: proxyActivities<AgentActivities>({
      taskQueue: agentQueue,
      startToCloseTimeout: seconds(t.generateSec),
      retry: retry(3),
    }).runAgentEpisode,
    writeAgentSamples: proxyActivities<AgentActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(300),
      retry: retry(10),
    }).writeAgentSamples,
  };
}

/** The grid world's environment step (tools queue) and its samples. */
export function gridProxies(t: Pick<RunConfig['timeouts'], 'toolSec'>) {
  return {
    gridChunk: proxyActivities<GridActivities>({
      taskQueue: TASK_QUEUES.tools,
      startToCloseTimeout: seconds(t.toolSec),
      retry: { ...retry(3), initialInterval: '200ms', maximumInterval: '2s', nonRetryableErrorTypes: [...NON_RETRYABLE_ERRORS, 'GridInputError'] },
    }).gridChunk,
    writeHorizonSamples: proxyActivities<HorizonSampleActivities>({
      taskQueue: TASK_QUEUES.orchestration,
      startToCloseTimeout: seconds(120),
      retry: retry(5),
    }).writeHorizonSamples,
  };
}

/** Chat episodes (task.chat): a model turn on the policy's inference queue, their samples and evaluations beside it. */
export function chatProxies(t: RunConfig['timeouts'], inferenceQueue: string = TASK_QUEUES.inference) {
  const onInference = (timeout: `${number}s`) =>
    proxyActivities<Pick<InferenceActivities, 'chatTurn' | 'writeChatSamples' | 'evaluateChatEpisodes'>>({ taskQueue: inferenceQueue, startToCloseTimeout: timeout, heartbeatTimeout: `${t.heartbeatSec}s`, retry: planActRetry(10) });
  const { chatTurn, evaluateChatEpisodes } = onInference(`${t.generateSec}s`);
  // No heartbeat: writing samples is a short read and render of the kept episodes.
  const { writeChatSamples } = proxyActivities<Pick<InferenceActivities, 'writeChatSamples'>>({ taskQueue: inferenceQueue, startToCloseTimeout: '5m', retry: planActRetry(5) });
  return { chatTurn, writeChatSamples, evaluateChatEpisodes };
}
