/**
 * A run whose workflow tasks fail for a reason no retry can fix: the server retries a failed
 * workflow task forever, so a run whose commands it refuses (search attributes the namespace lacks,
 * a feature the server has turned off, a payload over its limit) or whose code is not deterministic
 * waits with no failure. Found from the run and the children it waits on (describe: the pending
 * workflow task's attempt; the history's last WorkflowTaskFailed event: why).
 */
import { temporal } from '@temporalio/proto';

type WorkflowService = Pick<temporal.api.workflowservice.v1.WorkflowService, 'describeWorkflowExecution' | 'getWorkflowExecutionHistoryReverse'>;

const CAUSE = temporal.api.enums.v1.WorkflowTaskFailedCause;
const RUNNING = temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
const TASK_FAILED = temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;

/** Causes that the same task, retried with the same code against the same server, meets again. */
const UNFIXABLE = new Set<temporal.api.enums.v1.WorkflowTaskFailedCause>([
  ...Object.values(CAUSE).filter((c): c is number => typeof c === 'number' && /^WORKFLOW_TASK_FAILED_CAUSE_BAD_/.test(CAUSE[c] ?? '')),
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_FEATURE_DISABLED,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_GRPC_MESSAGE_TOO_LARGE,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_PAYLOADS_TOO_LARGE,
  CAUSE.WORKFLOW_TASK_FAILED_CAUSE_REQUEST_TOO_LARGE,
]);

export interface StuckTask {
  workflowId: string;
  /** The attempt the server is on (it failed attempt - 1 times). */
  attempt: number;
  /** The cause's name without its prefix, e.g. BAD_SEARCH_ATTRIBUTES. */
  cause: string;
  /** The failure the server or the worker recorded. */
  message: string;
}

export interface FindStuckOptions {
  /** Failed this many times in a row before it counts (one failure may be a cache not yet refreshed). */
  minFailures?: number;
  /** Workflows described per look, the run first, then the children it waits on, breadth first. */
  maxWorkflows?: number;
}

/** The first workflow task of run `workflowId` or a child it waits on that keeps failing for an unfixable cause. */
export async function findStuckWorkflowTask(service: WorkflowService, namespace: string, workflowId: string, opts: FindStuckOptions = {}): Promise<StuckTask | undefined> {
  const minFailures = opts.minFailures ?? 2;
  const queue: temporal.api.common.v1.IWorkflowExecution[] = [{ workflowId }];
  for (let seen = 0; queue.length > 0 && seen < (opts.maxWorkflows ?? 32); seen++) {
    const execution = queue.shift()!;
    const d = await service.describeWorkflowExecution({ namespace, execution });
    if (d.workflowExecutionInfo?.status !== RUNNING) continue;
    const attempt = d.pendingWorkflowTask?.attempt ?? 0;
    if (attempt > minFailures) {
      const failed = await lastTaskFailure(service, namespace, { workflowId: execution.workflowId, runId: d.workflowExecutionInfo.execution?.runId });
      if (failed && UNFIXABLE.has(failed.cause ?? 0)) {
        return {
          workflowId: execution.workflowId!,
          attempt,
          cause: (CAUSE[failed.cause ?? 0] ?? String(failed.cause)).replace(/^WORKFLOW_TASK_FAILED_CAUSE_/, ''),
          message: failed.failure?.message ?? '',
        };
      }
    }
    for (const child of d.pendingChildren ?? []) queue.push({ workflowId: child.workflowId, runId: child.runId });
  }
  return undefined;
}

/** The latest WorkflowTaskFailed event's attributes (the server records the first failure of a run of them). */
async function lastTaskFailure(service: WorkflowService, namespace: string, execution: temporal.api.common.v1.IWorkflowExecution): Promise<temporal.api.history.v1.IWorkflowTaskFailedEventAttributes | undefined> {
  const { history } = await service.getWorkflowExecutionHistoryReverse({ namespace, execution, maximumPageSize: 20 });
  return history?.events?.find((e) => e.eventType === TASK_FAILED)?.workflowTaskFailedEventAttributes ?? undefined;
}
