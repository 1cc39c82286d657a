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
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, ActivityNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInterceptorsFactory, NativeConnection } from '@temporalio/worker';

/** One running attempt, as its file holds it. */
interface AttemptEntry {
  host: string;
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

function processStart(pid: number): string | undefined {
  try {
    // Field 22 (starttime), counted after the command name, which is in parentheses and may hold spaces.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
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
  return pidStart === undefined || processStart(pid) === undefined || processStart(pid) === pidStart;
}

/** The interceptor that keeps this process's running attempts in the journal. */
export function attemptJournal(scope: JournalScope): ActivityInterceptorsFactory {
  fs.mkdirSync(scope.dir, { recursive: true });
  const self = { host: os.hostname(), pid: process.pid, pidStart: processStart(process.pid) };
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        const { info } = ctx;
        const entry: AttemptEntry = {
          ...self,
          ...(self.pidStart === undefined ? {} : { pidStart: self.pidStart }),
          address: scope.address,
          namespace: scope.namespace,
          taskToken: Buffer.from(info.taskToken).toString('base64'),
          activityType: info.activityType,
          workflowId: info.workflowExecution?.workflowId ?? '',
          attempt: info.attempt,
        };
        const file = path.join(scope.dir, `${process.pid}-${randomUUID()}.json`);
        // Written whole or not at all: a reader never sees half an entry.
        fs.writeFileSync(`${file}.tmp`, JSON.stringify(entry));
        fs.renameSync(`${file}.tmp`, file);
        try {
          return await next(input);
        } finally {
          fs.rmSync(file, { force: true });
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
    files = fs.readdirSync(scope.dir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const client = new Client({ connection, namespace: scope.namespace });
  const failed: string[] = [];
  for (const name of files) {
    const file = path.join(scope.dir, name);
    let entry: AttemptEntry;
    try {
      entry = JSON.parse(fs.readFileSync(file, 'utf8')) as AttemptEntry;
    } catch {
      continue; // Removed meanwhile by its own process.
    }
    if (entry.host !== os.hostname() || entry.address !== scope.address || entry.namespace !== scope.namespace) continue;
    if (isRunning(entry.pid, entry.pidStart)) continue;
    try {
      await client.activity.fail(
        Buffer.from(entry.taskToken, 'base64'),
        ApplicationFailure.retryable(`worker process ${entry.pid} died during this attempt; failed by process ${process.pid} when it started, so that the retry need not wait out the heartbeat timeout`, WORKER_DIED),
      );
      failed.push(`${entry.activityType} attempt ${entry.attempt} of ${entry.workflowId}`);
    } catch (err) {
      // Not found: already ended (timed out and retried, or its workflow closed). Anything else (the
      // server unreachable): the file stays for the next start, and the heartbeat timeout still holds.
      if (!(err instanceof ActivityNotFoundError)) {
        failed.push(`${entry.activityType} attempt ${entry.attempt} of ${entry.workflowId}: not failed (${(err as Error).message})`);
        continue;
      }
    }
    fs.rmSync(file, { force: true });
  }
  return failed;
}
