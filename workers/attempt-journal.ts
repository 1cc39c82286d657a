/**
 * Fast retry after a worker process dies. Temporal learns that an activity attempt's worker is gone
 * only when the attempt's heartbeat timeout passes (timeouts.heartbeatSec, 30 s by default; an
 * activity without one waits its start-to-close timeout), although a supervisor (systemd,
 * Kubernetes, bench:chaos) has a new worker polling within seconds.
 *
 * Each worker process polls under an identity of its own (host, pid, process start time and a random
 * part) and, before it polls, registers that identity in a journal folder on its host: one small file
 * per process, removed when the process ends cleanly. A worker process that starts finds the
 * registrations of processes that no longer run (same host, server and namespace), asks the server
 * for every running workflow's pending activities, and fails, through Temporal's async-completion
 * API, each attempt that is started and was last taken by a dead identity, with a retryable error:
 * Temporal retries it at once. The server is the record of which attempts a process held, so an
 * attempt counts from the moment the server handed it out, even if the process died before its own
 * code saw it (the SDK's core takes tasks while the JavaScript thread is busy).
 *
 * Only the attempt the dead process took is failed: a retry started by a live worker carries that
 * worker's identity, and one waiting to start is not in the started state. The fail follows the
 * check by milliseconds, while a newer attempt could only start after the old one timed out plus the
 * retry's backoff (200 ms at least here); should one start in between, it is failed and its work
 * done again, as a timeout would, nothing lost. The journal is an optimisation: when it cannot be
 * written or read, or the server not asked, the worker runs as without it and the timeouts hold.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { NativeConnection } from '@temporalio/worker';
import { readProcStat } from '../src/system/proc-stat';

/** A worker process, as its registration file holds it. */
export interface Registration {
  /** The identity its workers poll under: the server names it as an attempt's lastWorkerIdentity. */
  identity: string;
  host: string;
  /** The pid namespace (/proc/self/ns/pid): a pid means the same process only within one. */
  pidNamespace?: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat), where readable. */
  pidStart?: string;
  /** Which server and namespace it polls: only a process connected to them fails its attempts. */
  address: string;
  namespace: string;
}

export interface JournalScope {
  dir: string;
  address: string;
  namespace: string;
}

/** The failure type Temporal records on an attempt whose worker died (retryable). */
export const WORKER_DIED = 'WorkerDied';

/** A dead process's registration for another server or namespace is removed once this old: its attempts have long timed out. */
const FOREIGN_ENTRY_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

/** Workflows described at once by the start-up sweep. */
const DESCRIBE_CONCURRENCY = 16;

const REGISTRATION = /^worker-(\d+)-.*\.json$/;

function pidNamespace(): string | undefined {
  try {
    return fs.readlinkSync('/proc/self/ns/pid');
  } catch {
    return undefined;
  }
}

function isRunning(pid: number, pidStart: string | undefined): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: a process of another user has the id, so it runs.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = readProcStat(pid);
  if (stat === undefined) return true;
  // A zombie has died; only its parent has not reaped it yet.
  return stat.state !== 'Z' && (pidStart === undefined || stat.startTicks === pidStart);
}

/** This process as the journal and the server know it. */
export function thisWorker(scope: Omit<JournalScope, 'dir'>): Registration {
  const ns = pidNamespace();
  const pidStart = readProcStat(process.pid)?.startTicks;
  const host = os.hostname();
  // The random part keeps identities apart where the start time is unreadable or two containers
  // share a host name, pid and start tick.
  const identity = `${process.pid}@${host}/${pidStart ?? 'start-unknown'}-${randomBytes(4).toString('hex')}`;
  return { identity, host, ...(ns ? { pidNamespace: ns } : {}), pid: process.pid, ...(pidStart ? { pidStart } : {}), ...scope };
}

function warning(what: string, err: unknown): string {
  return `${what} (${(err as Error).message}); a killed worker's attempts wait for their timeouts`;
}

/**
 * Writes this process's registration, before it polls; returns a function that removes it (on a
 * clean exit) and the warning if it could not be written.
 */
export function register(dir: string, self: Registration): { unregister: () => void; warning?: string } {
  const file = path.join(dir, `worker-${self.pid}-${self.identity.split('/').at(-1)}.json`);
  try {
    fs.mkdirSync(dir, { recursive: true });
    // Written whole or not at all: a reader never sees half an entry.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify(self));
    fs.renameSync(`${file}.tmp`, file);
  } catch (err) {
    return { unregister: () => undefined, warning: warning(`cannot write ${file}`, err) };
  }
  const unregister = () => {
    try {
      fs.rmSync(file, { force: true });
    } catch {
      // Left behind, it is found to be a dead process's and its (no) attempts swept: harmless.
    }
  };
  return { unregister };
}

/**
 * Fails the started attempts of the registered processes that have died (on this host, for this
 * server and namespace) and removes their registrations; returns a line per attempt it failed or
 * could not, for the log. Never throws: a file it cannot act on stays for the next start.
 */
export async function failDeadWorkersAttempts(connection: NativeConnection, scope: JournalScope): Promise<string[]> {
  let names: string[];
  try {
    names = fs.readdirSync(scope.dir);
  } catch {
    return [];
  }
  const host = os.hostname();
  const ns = pidNamespace();
  const lines: string[] = [];
  const dead = new Map<string, { file: string; entry: Registration }>();
  for (const name of names) {
    const file = path.join(scope.dir, name);
    const pid = Number(REGISTRATION.exec(name.replace(/\.tmp$/, ''))?.[1]);
    if (!Number.isSafeInteger(pid)) continue;
    try {
      if (name.endsWith('.tmp')) {
        // Killed between writing its registration and naming it: it had not polled.
        if (!isRunning(pid, undefined)) fs.rmSync(file, { force: true });
        continue;
      }
      const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as Registration;
      if (typeof entry?.identity !== 'string') throw new Error('not a worker registration');
      if (entry.host !== host || entry.pidNamespace !== ns || isRunning(entry.pid, entry.pidStart)) continue;
      if (entry.address !== scope.address || entry.namespace !== scope.namespace) {
        // Another server's or namespace's: not this process's to fail, and no use once long dead.
        if (Date.now() - fs.statSync(file).mtimeMs > FOREIGN_ENTRY_MAX_AGE_MS) fs.rmSync(file, { force: true });
        continue;
      }
      dead.set(entry.identity, { file, entry });
    } catch (err) {
      // Removed meanwhile by its own process (ENOENT), or unreadable: left for the next start.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') lines.push(`${name}: left for the next start (${(err as Error).message})`);
    }
  }
  if (dead.size === 0) return lines;
  try {
    const client = new Client({ connection, namespace: scope.namespace });
    lines.push(...(await forStartedAttempts(client, (identity) => dead.has(identity), (a) => failAttempt(client, a, dead.get(a.identity)!.entry))));
  } catch (err) {
    // The server unreachable or refusing: the registrations stay for the next start.
    return [...lines, warning(`could not fail the attempts of dead worker ${[...dead.values()].map((d) => d.entry.pid).join(', ')}`, err)];
  }
  for (const { file } of dead.values()) {
    try {
      fs.rmSync(file, { force: true });
    } catch (err) {
      lines.push(warning(`cannot remove ${file}`, err));
    }
  }
  return lines;
}

/** An activity attempt that the server shows started, and the worker it was handed to. */
export interface StartedAttempt {
  workflowId: string;
  runId: string;
  activityId: string;
  activityType: string;
  attempt: number;
  /** The worker identity that took it (lastWorkerIdentity). */
  identity: string;
}

/**
 * Calls `f` on each started attempt of the namespace's running workflows that a worker `holds`
 * names took, right after its workflow is described; returns what `f` returned. A workflow that
 * closed since it was listed has none.
 */
export async function forStartedAttempts<T>(client: Client, holds: (identity: string) => boolean, f: (a: StartedAttempt) => Promise<T>): Promise<T[]> {
  const running: Array<{ workflowId: string; runId: string }> = [];
  for await (const w of client.workflow.list({ query: 'ExecutionStatus = "Running"' })) running.push(w);
  const out: T[] = [];
  for (let i = 0; i < running.length; i += DESCRIBE_CONCURRENCY) {
    const batch = running.slice(i, i + DESCRIBE_CONCURRENCY).map(async ({ workflowId, runId }) => {
      let pending: temporal.api.workflow.v1.IPendingActivityInfo[];
      try {
        pending = (await client.workflow.getHandle(workflowId, runId).describe()).raw.pendingActivities ?? [];
      } catch (err) {
        if ((err as Error).name === 'WorkflowNotFoundError') return [];
        throw err;
      }
      const started = pending.filter((a) => a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED && holds(a.lastWorkerIdentity ?? ''));
      return Promise.all(
        started.map((a) => f({ workflowId, runId, activityId: a.activityId!, activityType: a.activityType?.name ?? '', attempt: a.attempt ?? 1, identity: a.lastWorkerIdentity! })),
      );
    });
    for (const results of await Promise.all(batch)) out.push(...results);
  }
  return out;
}

/** Fails a dead worker's attempt for its retry; the line for the log. */
async function failAttempt(client: Client, a: StartedAttempt, holder: Registration): Promise<string> {
  const what = `${a.activityType} attempt ${a.attempt} of ${a.workflowId}`;
  try {
    await client.activity.fail(
      { workflowId: a.workflowId, runId: a.runId, activityId: a.activityId },
      ApplicationFailure.retryable(`worker process ${holder.pid} died during this attempt (identity ${holder.identity}); failed by process ${process.pid} when it started, so that the retry need not wait out the attempt's timeout`, WORKER_DIED),
    );
    return `failed ${what} for its retry`;
  } catch (err) {
    // Ended meanwhile: completed, timed out, or its workflow closed.
    if (err instanceof ActivityNotFoundError) return `${what} had already ended`;
    throw err;
  }
}
