/**
 * rollout.batchRequests 'local' with coalesced replies: an episode workflow's calls go through one
 * exchangeCalls local activity at a time (activities/call-exchange.ts). Each exchange submits the
 * calls made since the previous one and returns the replies ready by then: it returns once one of
 * the workflow's calls settles, after a window for those settling with it. So a reply reaches its
 * episode within the window (not with a batch's slowest call), and one activation and one marker
 * carry every reply of the window, where a local activity per call took one of each per reply.
 *
 * The replies are in the markers, so the workflow replays from its history alone; a call whose
 * exchange was never recorded (the worker stopped) is reported unknown by the next worker and
 * submitted again. Each call is retried on its own in the worker, with its activity's policy.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { GenerateInput, GenerateResult } from '../activities/inference';
import type { ExchangeCall, ExchangeCallsResult } from '../activities/call-exchange';
import type { RunConfig } from '../src/config/schema';
import { fnv1a32 } from '../src/domain/rng';
import { EXCHANGE_MAX_WAIT_MS, exchangeProxy } from './activity-proxies';
import { endOfBurst } from './request-batcher';

/** How long an exchange waits, after its first reply, for replies settling with it (ms). */
export const EXCHANGE_WINDOW_MS = 100;

/** The two calls, as the local activities of one call each would answer them (workflows/episode-calls.ts). */
export interface ExchangedCalls {
  generate(input: GenerateInput): Promise<GenerateResult>;
  /** Rejects with the calculator's CalcInputError (details: the attempt) on bad input. */
  calcWithAttempt(input: { expression: string }): Promise<{ value: string; attempt: number }>;
}

interface Waiting {
  call: ExchangeCall;
  /** The value, and the attempt that gave it (tool metrics count the calculator's retries). */
  resolve(answer: { value: GenerateResult | string; attempt: number }): void;
  reject(err: unknown): void;
}

export function exchangedCalls(t: RunConfig['timeouts']): ExchangedCalls {
  const { exchangeCalls, retry } = exchangeProxy(t);

  let seq = 0;
  /** Calls in flight, by id. */
  const waiting = new Map<string, Waiting>();
  /** Calls to send with the next exchange (new, or unknown to the worker). */
  let toSubmit: ExchangeCall[] = [];
  /** Calls in flight that no exchange in flight answers for. */
  let unowned: string[] = [];
  let flushArmed = false;

  const settle = (result: ExchangeCallsResult, owned: string[]): void => {
    const answered = new Set<string>();
    for (const r of result.replies) {
      const w = waiting.get(r.id);
      answered.add(r.id);
      if (!w) continue;
      waiting.delete(r.id);
      if ('ok' in r.outcome) w.resolve({ value: r.outcome.ok, attempt: r.attempt });
      else w.reject(ApplicationFailure.nonRetryable(r.outcome.failed.message, r.outcome.failed.type, { attempt: r.attempt }));
    }
    const unknown = new Set(result.unknown);
    for (const id of result.unknown) {
      const w = waiting.get(id);
      if (w) toSubmit.push(w.call);
    }
    for (const id of owned) if (!answered.has(id) && !unknown.has(id) && waiting.has(id)) unowned.push(id);
  };

  /** Fails these calls with `err`. */
  const rejectAll = (ids: string[], err: unknown): void => {
    for (const id of ids) {
      waiting.get(id)?.reject(err);
      waiting.delete(id);
    }
  };

  /** One exchange for the calls made in this activation and those no exchange answers for. */
  const flushAfterBurst = async (): Promise<void> => {
    flushArmed = true;
    try {
      await endOfBurst();
    } catch (err) {
      // The scope was cancelled before the burst was sent: every call not yet sent is cancelled.
      flushArmed = false;
      rejectAll([...unowned, ...toSubmit.map((c) => c.id)], err);
      toSubmit = [];
      unowned = [];
      return;
    }
    flushArmed = false;
    const submit = toSubmit;
    const owned = [...unowned, ...submit.map((c) => c.id)];
    toSubmit = [];
    unowned = [];
    if (owned.length === 0) return;
    let result: ExchangeCallsResult;
    try {
      result = await exchangeCalls({ submit, await: owned, windowMs: EXCHANGE_WINDOW_MS, maxWaitMs: EXCHANGE_MAX_WAIT_MS, retry });
    } catch (err) {
      // The exchange itself failed through its retries: every call it answered for shares that failure.
      rejectAll(owned, err);
      return;
    }
    settle(result, owned);
    armFlush();
  };

  const armFlush = (): void => {
    if (!flushArmed && (toSubmit.length > 0 || unowned.length > 0)) void flushAfterBurst();
  };

  /** A call's promise, settled by the exchange that brings its reply (made without async wrappers: each promise a workflow makes costs the SDK a stack capture). */
  const call = <R>(c: ExchangeCall, answer: (value: GenerateResult | string, attempt: number) => R): Promise<R> =>
    new Promise((resolve, reject) => {
      waiting.set(c.id, { call: c, resolve: (a) => resolve(answer(a.value, a.attempt)), reject });
      toSubmit.push(c);
      armFlush();
    });

  /**
   * A call's id: its place in this workflow's calls and a hash of what it asks. The worker's table
   * runs an id once, so the id must name one request: two live copies of the same run (a workflow
   * task that timed out while its exchange ran on, then the run played again) can number their
   * calls differently once their exchanges returned different replies, and a bare number would get
   * one copy's reply for the other's call (a generate's completion for a calculator call, seen at
   * 1,024 episodes).
   */
  const idOf = (what: unknown): string => `c${seq++}.${fnv1a32(JSON.stringify(what)).toString(36)}`;

  return {
    generate: (input) => call({ id: idOf(input), kind: 'generate', input }, (value) => value as GenerateResult),
    calcWithAttempt: ({ expression }) => call({ id: idOf(expression), kind: 'calc', expression }, (value, attempt) => ({ value: value as string, attempt })),
  };
}
