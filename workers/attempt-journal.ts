/**
 * Fast retry after a worker process dies. Temporal learns that an activity attempt's worker is gone
 * only when the attempt's heartbeat timeout passes (timeouts.heartbeatSec, 30 s by default), so a
 * killed trainer leaves its update unretried that long, although a supervisor (systemd, Kubernetes,
 * bench:chaos) has a new worker polling within seconds. Each worker process notes the attempts it
 * runs in a journal folder on its host: one file per attempt, written before the attempt runs and
 * removed when it returns, naming the process and the attempt's task token. A worker process that
 * starts reads the folder and fails, through Temporal's async-completion API, every attempt whose
 * process no longer runs, with a retryable error: Temporal retries it at once.
 *
 * Failing an attempt that is in fact alive (a process id reused by a process started since, which
 * the start time read from /proc rules out on Linux) costs its work being done again, as a heartbeat
 * timeout would; nothing is lost. An attempt that already ended is not found, and its file goes.
 * The journal is an optimisation: when it cannot be written or read, activities run as without it
 * and the heartbeat timeout holds.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory, NativeConnection } from '@temporalio/worker';
import { readProcStat } from '../src/system/proc-stat';

/** One running attempt, as its file holds it. */
interface AttemptEntry {
  host: string;
  /** The pid namespace (/proc/self/ns/pid): a pid means the same process only within one. */
  pidNamespace?: string;
  pid: number;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat), where readable. */
  pidStart?: string;
  /** Which server and namespace the attempt belongs to: only a process connected to them fails it. */
  address: string;
  namespace: string;
  taskToken: string;
  activityType: string;
  workflowId: string;
  attempt: number;
}

export interface JournalScope {
  dir: string;
  address: string;
  namespace: string;
}

/** The failure type Temporal records on an attempt whose worker died (retryable). */
export const WORKER_DIED = 'WorkerDied';

/** A dead process's entry for another server or namespace is removed once this old: its attempt has long timed out. */
const FOREIGN_ENTRY_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

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

function warnOnce(): (what: string, err: unknown) => void {
  let warned = false;
  return (what, err) => {
    if (warned) return;
    warned = true;
    console.warn(`[worker ${process.pid}] attempt journal: ${what} (${(err as Error).message}); activities run without it, a killed worker's attempts retried after their heartbeat timeout`);
  };
}

/** The interceptor that keeps this process's running attempts in the journal. */
export function attemptJournal(scope: JournalScope): ActivityInterceptorsFactory {
  const warn = warnOnce();
  try {
    fs.mkdirSync(scope.dir, { recursive: true });
  } catch (err) {
    warn(`cannot create ${scope.dir}`, err);
  }
  const ns = pidNamespace();
  const start = readProcStat(process.pid)?.startTicks;
  const self = { host: os.hostname(), ...(ns ? { pidNamespace: ns } : {}), pid: process.pid, ...(start ? { pidStart: start } : {}) };
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { info } = ctx;
        const entry: AttemptEntry = {
          ...self,
          address: scope.address,
          namespace: scope.namespace,
          taskToken: Buffer.from(info.taskToken).toString('base64'),
          activityType: info.activityType,
          workflowId: info.workflowExecution?.workflowId ?? '',
          attempt: info.attempt,
        };
        const file = path.join(scope.dir, `${process.pid}-${randomUUID()}.json`);
        let written = false;
        try {
          // Written whole or not at all: a reader never sees half an entry.
          fs.writeFileSync(`${file}.tmp`, JSON.stringify(entry));
          fs.renameSync(`${file}.tmp`, file);
          written = true;
        } catch (err) {
          warn(`cannot write ${file}`, err);
        }
        try {
          return await next(input);
        } finally {
          if (written) {
            try {
              fs.rmSync(file, { force: true });
            } catch (err) {
              // Left behind, the entry is found to be this live process's and kept; harmless.
              warn(`cannot remove ${file}`, err);
            }
          }
        }
      },
    },
  });
}

/**
 * Fails the journal's attempts whose process has died (on this host, for this server and
 * namespace) and removes their files; returns a line per attempt it failed or could not, for the log.
 */
export async function failOrphanedAttempts(connection: NativeConnection, scope: JournalScope): Promise<string[]> {
  let files: string[];
  try {
    files = fs.readdirSync(scope.dir);
  } catch {
    return [];
  }
  const client = new Client({ connection, namespace: scope.namespace });
  const host = os.hostname();
  const ns = pidNamespace();
  const lines: string[] = [];
  for (const name of files) {
    const file = path.join(scope.dir, name);
    try {
      if (name.endsWith('.tmp')) {
        // Killed between writing an entry and naming it: the attempt had not started.
        const pid = Number(name.split('-')[0]);
        if (Number.isSafeInteger(pid) && !isRunning(pid, undefined)) fs.rmSync(file, { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const entry = JSON.parse(fs.readFileSync(file, 'utf8')) as AttemptEntry;
      if (entry.host !== host || entry.pidNamespace !== ns || isRunning(entry.pid, entry.pidStart)) continue;
      if (entry.address !== scope.address || entry.namespace !== scope.namespace) {
        // Another server's or namespace's: not this process's to fail, and no use once long dead.
        if (Date.now() - fs.statSync(file).mtimeMs > FOREIGN_ENTRY_MAX_AGE_MS) fs.rmSync(file, { force: true });
        continue;
      }
      lines.push(await failAttempt(client, entry));
      fs.rmSync(file, { force: true });
    } catch (err) {
      // Removed meanwhile by its own process, unreadable, or the server unreachable: the file stays
      // for the next start, and the attempt's heartbeat timeout still holds.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') lines.push(`${name}: left for the next start (${(err as Error).message})`);
    }
  }
  return lines;
}

async function failAttempt(client: Client, entry: AttemptEntry): Promise<string> {
  const what = `${entry.activityType} attempt ${entry.attempt} of ${entry.workflowId}`;
  try {
    await client.activity.fail(
      Buffer.from(entry.taskToken, 'base64'),
      ApplicationFailure.retryable(`worker process ${entry.pid} died during this attempt; failed by process ${process.pid} when it started, so that the retry need not wait out the heartbeat timeout`, WORKER_DIED),
    );
    return `failed ${what} for its retry`;
  } catch (err) {
    // Already ended: timed out and retried, or its workflow closed.
    if (err instanceof ActivityNotFoundError) return `${what} had already ended`;
    throw err;
  }
}
