/**
 * How the main job waits for its run: the run's result, unless the job must stop here first (a
 * signal, its trainer process gone) or the run cannot go on (a workflow task that keeps failing for
 * a reason no retry fixes, scripts/lib/stuck-workflow-task.ts). A server outage is waited out, said
 * once when it starts and once when it ends: the run is kept on the server, and the workers
 * reconnect by themselves.
 */
import { WorkflowFailedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { findStuckWorkflowTask, type StuckTask } from './stuck-workflow-task';
import { waitForServer } from './dev-server';

export type RunEnd =
  | { kind: 'completed'; result: unknown }
  | { kind: 'failed'; error: unknown }
  | { kind: 'stuck'; task: StuckTask }
  | { kind: 'interrupted'; why: string; code: number };

export interface WaitForRunOptions {
  handle: WorkflowHandle;
  service: Parameters<typeof findStuckWorkflowTask>[0];
  namespace: string;
  address: string;
  /** Resolves when the job must stop here, saying why and with which exit code. */
  interrupt: Promise<{ why: string; code: number }>;
  /** A line for the person watching (above the progress bar). */
  say: (line: string) => void;
  /** How often to look for a workflow task that keeps failing. */
  stuckCheckMs?: number;
  /** Whether the server answers now (default: getSystemInfo within 5 s). */
  reachable?: () => Promise<boolean>;
}

/** Errors in a row from a server that answers before the wait gives up and reports the last. */
const MAX_ERRORS_WHILE_REACHABLE = 5;

export async function waitForRun(opts: WaitForRunOptions): Promise<RunEnd> {
  const reachable = opts.reachable ?? (() => waitForServer(opts.address, 5_000).then(() => true, () => false));
  let done = false;
  const interrupted: Promise<RunEnd> = opts.interrupt.then(({ why, code }) => ({ kind: 'interrupted', why, code }));
  const stuck = watchForStuckTask(opts, () => done);
  try {
    for (let errors = 0; ; ) {
      const waited = opts.handle.result().then(
        (result): RunEnd | { kind: 'error'; error: unknown } => ({ kind: 'completed', result }),
        (error: unknown) => ({ kind: 'error' as const, error }),
      );
      const end = await Promise.race([waited, interrupted, stuck]);
      if (end.kind !== 'error') return end;
      if (end.error instanceof WorkflowFailedError || end.error instanceof WorkflowNotFoundError) return { kind: 'failed', error: end.error };
      if (await reachable()) {
        // Not an outage: a few tries, then the error is the run's.
        if (++errors >= MAX_ERRORS_WHILE_REACHABLE) return { kind: 'failed', error: end.error };
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      errors = 0;
      const since = Date.now();
      opts.say(`Temporal server ${opts.address} unreachable (${describe(end.error)}), waiting for it; the run is kept on the server and goes on when it is back`);
      const back = await Promise.race([waitForServer(opts.address, Number.MAX_SAFE_INTEGER, () => done).then(() => undefined), interrupted]);
      if (back) return back;
      opts.say(`Temporal server ${opts.address} is back after ${Math.round((Date.now() - since) / 1000)} s`);
    }
  } finally {
    done = true;
  }
}

/** Resolves with the first stuck workflow task found (never, while there is none); looks until `stopped`. */
async function watchForStuckTask(opts: WaitForRunOptions, stopped: () => boolean): Promise<RunEnd> {
  for (;;) {
    await new Promise((r) => setTimeout(r, opts.stuckCheckMs ?? 10_000).unref());
    if (stopped()) return new Promise<never>(() => undefined);
    // Unanswered while the server is away: the outage is the result's to report.
    const task = await findStuckWorkflowTask(opts.service, opts.namespace, opts.handle.workflowId).catch(() => undefined);
    if (task) return { kind: 'stuck', task };
  }
}

function describe(err: unknown): string {
  const cause = (err as { cause?: unknown })?.cause;
  const text = err instanceof Error ? err.message : String(err);
  return cause instanceof Error && cause.message !== text ? `${text}: ${cause.message}` : text;
}
