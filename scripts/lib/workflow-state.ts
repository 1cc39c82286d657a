/**
 * The rollout viewer's source of a run's status: its workflow's, described by the Temporal server
 * (a run id is its workflow id). A server that does not answer in time, or does not know the id,
 * gives undefined: the page then says neither "live" nor finished rather than guessing.
 */
import { Connection, WorkflowClient, WorkflowNotFoundError, type WorkflowExecutionStatusName } from '@temporalio/client';
import type { WorkflowStateLookup } from '../../src/viewer/run-data';

type State = NonNullable<Awaited<ReturnType<WorkflowStateLookup>>>;

/** Open workflows (a paused one, the older execution of one continued as new) are running. */
const STATES: Partial<Record<WorkflowExecutionStatusName, State>> = {
  RUNNING: 'running',
  PAUSED: 'running',
  CONTINUED_AS_NEW: 'running',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'canceled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed-out',
};

/**
 * A server that did not answer is not asked again for `retryMs`: each page poll would otherwise wait
 * out the deadline, and the status would stay unknown anyway.
 */
export function workflowStateLookup(connection: Connection, namespace: string, timeoutMs = 1000, retryMs = 30_000): WorkflowStateLookup {
  const client = new WorkflowClient({ connection, namespace });
  let downUntil = 0;
  return async (runId) => {
    if (Date.now() < downUntil) return undefined;
    try {
      const described = await connection.withDeadline(Date.now() + timeoutMs, () => client.getHandle(runId).describe());
      return STATES[described.status.name];
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) downUntil = Date.now() + retryMs;
      return undefined;
    }
  };
}
