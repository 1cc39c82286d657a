/**
 * How an episode workflow reaches the inference and tools queues: the requests its episodes make in
 * one activation go as one generateBatch / calcBatch activity per queue (workflows/request-batcher.ts),
 * or one activity per request: with rollout.batchRequests false, and in histories recorded before
 * batching (no 'batched-requests' marker); or, with rollout.batchRequests 'local', each request a
 * local activity of the orchestration worker (see localCalls).
 */
import { ActivityFailure, ApplicationFailure, patched } from '@temporalio/workflow';
import type { GenerateInput, GenerateResult } from '../activities/inference';
import type { RunConfig } from '../src/config/schema';
import type { BatchOutcome } from '../src/contracts/batch';
import { generateBatchProxy, generateProxy, localCallProxies, planActProxies } from './activity-proxies';
import { batchPerActivation } from './request-batcher';
import { exchangedCalls, type ExchangedCalls } from './call-exchange';
import { TASK_QUEUES } from './task-queues';

/** The calculator's answer to one call, with the attempt that gave it (tool metrics count retries). */
export type CalcAnswer = { value: string; attempt: number } | { inputError: string; attempt: number };

export interface EpisodeCalls {
  /** One completion from the inference queue given (default: the project's). */
  generate(input: GenerateInput, taskQueue?: string): Promise<GenerateResult>;
  /** One calculator call; rejects only when the calculator stays unavailable through its retries. */
  calc(expression: string): Promise<CalcAnswer>;
}

/** The patch that batches an episode workflow's requests; decided once, before the workflow's first command. */
export const BATCHED_REQUESTS_PATCH = 'batched-requests';

/** The patch that sends 'local' calls through exchanges (workflows/call-exchange.ts); before it, a local activity per call. */
export const COALESCED_LOCAL_CALLS_PATCH = 'coalesced-local-calls';

/**
 * The calls of one episode workflow. `batch` is rollout.batchRequests; the marker is recorded
 * either way, so the choice replays from the input alone.
 */
export function episodeCalls(t: RunConfig['timeouts'], batch: RunConfig['rollout']['batchRequests']): EpisodeCalls {
  // A value no history recorded before it has: nothing to patch.
  if (batch === 'local') return localCalls(patched(COALESCED_LOCAL_CALLS_PATCH) ? exchangedCalls(t) : localCallProxies(t));
  return patched(BATCHED_REQUESTS_PATCH) && batch ? batchedCalls(t) : perRequestCalls(t);
}

/**
 * The calls run by the worker that runs the workflow task, in its process: through exchanges that
 * return the replies ready within a short window of each other (workflows/call-exchange.ts), or, in
 * histories recorded before them, a local activity per call. Either way no call goes through the
 * server's task queues, each reply reaches its episode without waiting for other calls, and the
 * replies are recorded as markers (docs/benchmarks.md). The orchestration worker must host generate
 * and the calculator (workers/create-workers.ts: a process that also hosts the inference and tools
 * queues does). A policy on an inference queue of its own cannot be honoured, and is refused rather
 * than served by this worker's engine.
 */
function localCalls(local: ExchangedCalls): EpisodeCalls {
  return {
    generate(input, taskQueue) {
      if (taskQueue !== undefined && taskQueue !== TASK_QUEUES.inference) {
        throw ApplicationFailure.nonRetryable(
          `rollout.batchRequests 'local' runs generate on the orchestration worker; the policy's inference queue ${JSON.stringify(taskQueue)} cannot be used that way (set rollout.batchRequests true or false)`,
          'ConfigError',
        );
      }
      return local.generate(input);
    },
    calc: (expression) => calcAnswer(local.calcWithAttempt({ expression })),
  };
}

/** One activity per request (generate, calcWithAttempt), as histories recorded before batching have them. */
export function perRequestCalls(t: RunConfig['timeouts']): EpisodeCalls {
  const { tools } = planActProxies(t);
  const generatorOf = perQueue((taskQueue) => generateProxy(t, taskQueue));
  return {
    generate: (input, taskQueue = TASK_QUEUES.inference) => generatorOf(taskQueue)(input),
    calc: (expression) => calcAnswer(tools.calcWithAttempt({ expression })),
  };
}

/** A calcWithAttempt call's answer: bad input is the actor's mistake, answered to it, not a failure. */
async function calcAnswer(call: Promise<CalcAnswer>): Promise<CalcAnswer> {
  try {
    return await call;
  } catch (err) {
    // An activity's failure carries the calculator's as its cause; an exchange's call fails with it.
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.type === 'CalcInputError') return { inputError: cause.message, attempt: attemptOf(cause) };
    throw err;
  }
}

/** Each activation's requests as one activity per inference queue, and one for the calculator. */
function batchedCalls(t: RunConfig['timeouts']): EpisodeCalls {
  const { tools } = planActProxies(t);
  const generatorOf = perQueue((taskQueue) => {
    const batch = generateBatchProxy(t, taskQueue);
    return batchPerActivation((requests: GenerateInput[]) => batch({ requests }));
  });
  const calc = batchPerActivation(async (expressions: string[]): Promise<Array<BatchOutcome<CalcAnswer>>> => {
    const { outcomes, attempt } = await tools.calcBatch({ expressions });
    // Bad input is the actor's mistake, answered to it; it is no failure of the call.
    return outcomes.map((o) => ({ ok: 'ok' in o ? { value: o.ok, attempt } : { inputError: o.failed.message, attempt } }));
  });
  return {
    generate: (input, taskQueue = TASK_QUEUES.inference) => generatorOf(taskQueue)(input),
    calc,
  };
}

/** One generate function per inference queue, made at its first use (a batcher batches one queue's requests). */
function perQueue(make: (taskQueue: string) => (input: GenerateInput) => Promise<GenerateResult>): (taskQueue: string) => (input: GenerateInput) => Promise<GenerateResult> {
  const made = new Map<string, (input: GenerateInput) => Promise<GenerateResult>>();
  return (taskQueue) => {
    let f = made.get(taskQueue);
    if (!f) made.set(taskQueue, (f = make(taskQueue)));
    return f;
  };
}

/** The attempt a CalcInputError names in its details (1 when it names none). */
export function attemptOf(failure: ApplicationFailure): number {
  const details = failure.details?.[0];
  const attempt = details && typeof details === 'object' && 'attempt' in details ? Number(details.attempt) : 1;
  return Number.isInteger(attempt) && attempt >= 1 ? attempt : 1;
}
