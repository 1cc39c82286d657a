/**
 * exchangeCalls: the local activity through which an episode workflow with rollout.batchRequests
 * 'local' makes its calls (workflows/call-exchange.ts). One exchange submits the calls the workflow
 * made since the last one and returns the replies that are ready: as soon as one of the workflow's
 * calls settles, plus a short window for those settling with it (src/engine/call-table.ts). The
 * calls run in this process, retried here as their activities' retry policies say, and outlive the
 * exchange that submitted them; the workflow's next exchange claims them.
 *
 * Durable: a call whose exchange never completed (this worker stopped) is unknown to the worker that
 * replays the workflow, which says so (`unknown`), and the workflow submits it again.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { CallTable, type CallRetry } from '../src/engine/call-table';
import type { BatchOutcome } from '../src/contracts/batch';
import type { GenerateInput, GenerateResult } from './inference';

/** One call of an episode: a completion or a calculator expression; `id` is unique in its workflow run. */
export type ExchangeCall = { id: string } & ({ kind: 'generate'; input: GenerateInput } | { kind: 'calc'; expression: string });

/** An activity retry policy in plain numbers, applied here to each call of its kind. */
export interface ExchangeRetry {
  maximumAttempts: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maximumIntervalMs: number;
  /** One attempt's limit (the activity's start-to-close timeout). */
  attemptTimeoutMs: number;
  nonRetryableErrorTypes: string[];
}

export interface ExchangeCallsInput {
  /** New calls, and calls a previous exchange reported unknown. */
  submit: ExchangeCall[];
  /** Every call this exchange answers for: the ones submitted and earlier ones still in flight. */
  await: string[];
  /** How long after the first reply to wait for more. */
  windowMs: number;
  /** Come back empty after this long with no reply (the workflow exchanges again). */
  maxWaitMs: number;
  retry: { generate: ExchangeRetry; calc: ExchangeRetry };
}

/** A settled call: its value or its failure (type and message, as its activity would have failed), and the attempt that settled it. */
export interface ExchangeReply {
  id: string;
  attempt: number;
  outcome: BatchOutcome<GenerateResult | string>;
}

export interface ExchangeCallsResult {
  replies: ExchangeReply[];
  /** Awaited calls this worker does not have: submit them again. */
  unknown: string[];
}

/** What the calls run: the orchestration worker's engine client and calculator. */
export interface ExchangeTargets {
  generate?(input: GenerateInput): Promise<GenerateResult>;
  /** `attempt`: this call's, from 1 (the exchange retries a failed call). */
  calc?(expression: string, attempt: number): Promise<string>;
}

export function createCallExchangeActivities(targets: ExchangeTargets, table = new CallTable<GenerateResult | string>()) {
  return {
    async exchangeCalls(input: ExchangeCallsInput): Promise<ExchangeCallsResult> {
      const ctx = Context.current();
      const run = ctx.info.workflowExecution;
      if (!run) throw ApplicationFailure.nonRetryable('exchangeCalls is an episode workflow\'s local activity: it has no workflow here', 'ConfigError');
      // A workflow run's calls are its own; a reset or a new run starts from nothing.
      const prefix = `${run.workflowId}/${run.runId}/`;
      const retries = { generate: callRetry(input.retry.generate), calc: callRetry(input.retry.calc) };
      for (const call of input.submit) table.start(prefix + call.id, (attempt) => runCall(targets, call, attempt), retries[call.kind]);
      const { settled, unknown } = await table.claim(
        input.await.map((id) => prefix + id),
        { windowMs: input.windowMs, maxWaitMs: input.maxWaitMs, signal: ctx.cancellationSignal },
      );
      return {
        replies: settled.map((s) => ({ id: s.key.slice(prefix.length), attempt: s.attempt, outcome: 'ok' in s ? { ok: s.ok } : { failed: failureOf(s.error) } })),
        unknown: unknown.map((k) => k.slice(prefix.length)),
      };
    },
  };
}

export type CallExchangeActivities = ReturnType<typeof createCallExchangeActivities>;

function runCall(targets: ExchangeTargets, call: ExchangeCall, attempt: number): Promise<GenerateResult | string> {
  const target = call.kind === 'generate' ? targets.generate : targets.calc;
  if (!target) {
    return Promise.reject(
      ApplicationFailure.nonRetryable(
        `rollout.batchRequests 'local' runs ${call.kind} on the orchestration worker, and this one does not host it (run the orchestration worker in a process that also hosts the ${call.kind === 'generate' ? 'inference' : 'tools'} queue, or set rollout.batchRequests true or false)`,
        'ConfigError',
      ),
    );
  }
  return call.kind === 'generate' ? targets.generate!(call.input) : targets.calc!(call.expression, attempt);
}

function callRetry(r: ExchangeRetry): CallRetry {
  return {
    ...r,
    isNonRetryable: (err) => err instanceof ApplicationFailure && (err.nonRetryable || r.nonRetryableErrorTypes.includes(err.type ?? '')),
  };
}

/** A call's failure as its activity would have reported it: its type (the error's name when it has none) and message. */
function failureOf(err: unknown): { type: string; message: string } {
  if (err instanceof ApplicationFailure) return { type: err.type ?? 'Error', message: err.message };
  if (err instanceof Error) return { type: err.name, message: err.message };
  return { type: 'Error', message: String(err) };
}
