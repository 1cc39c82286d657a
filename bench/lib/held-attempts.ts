/**
 * For bench:chaos: the activity attempts a killed worker held when it died, and when each was
 * retried, as the server shows them (workers/attempt-journal.ts has a replacement fail them when it
 * starts; without that they wait for their heartbeat timeout).
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { forStartedAttempts, type StartedAttempt } from '../../workers/attempt-journal';

export interface RetriedAttempt extends StartedAttempt {
  /** When the server ended the held attempt and scheduled the next (epoch ms), if seen. */
  failedAt?: number;
  /** How it ended: the failure type (WorkerDied), or the timeout's kind. */
  endedBy?: string;
  /** When the next attempt started (epoch ms); the time it was seen gone where it ran between two looks. */
  retryStartedAt?: number;
}

/** The started attempts whose last worker was `identity`. */
export function heldAttempts(client: Client, identity: string): Promise<StartedAttempt[]> {
  return forStartedAttempts(client, (id) => id === identity, async (a) => a);
}

const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number | undefined =>
  t ? Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6 : undefined;

/** Looks at the held attempts every 200 ms until each one's retry has started or `timeoutMs` passes. */
export async function watchRetries(client: Client, held: readonly StartedAttempt[], timeoutMs: number): Promise<RetriedAttempt[]> {
  const out: RetriedAttempt[] = held.map((a) => ({ ...a }));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && out.some((a) => a.retryStartedAt === undefined)) {
    const waiting = out.filter((a) => a.retryStartedAt === undefined);
    for (const runId of new Set(waiting.map((a) => a.runId))) {
      const first = waiting.find((a) => a.runId === runId)!;
      // Unreachable (the server is itself a fault): look again next time.
      const pending = await client.workflow.getHandle(first.workflowId, runId).describe().then((d) => d.raw.pendingActivities ?? [], () => undefined);
      if (!pending) continue;
      for (const a of waiting.filter((w) => w.runId === runId)) {
        const now = pending.find((p) => p.activityId === a.activityId);
        if (!now) {
          // Retried and done between two looks (or its workflow closed): no later than now.
          a.failedAt ??= Date.now();
          a.endedBy ??= 'ended between two looks';
          a.retryStartedAt = Date.now();
        } else if ((now.attempt ?? 1) > a.attempt) {
          const failure = now.lastFailure;
          a.failedAt ??= ms(now.lastAttemptCompleteTime);
          a.endedBy ??= failure?.applicationFailureInfo?.type ?? (failure?.timeoutFailureInfo ? `timeout (${temporal.api.enums.v1.TimeoutType[failure.timeoutFailureInfo.timeoutType ?? 0]})` : failure?.message ?? undefined);
          if (now.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) a.retryStartedAt = ms(now.lastStartedTime) ?? Date.now();
        }
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return out;
}
