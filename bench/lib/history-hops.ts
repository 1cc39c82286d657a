/**
 * Where a rollout's time went inside Temporal, read back from the histories of the rollout
 * workflow and its children: how long tasks waited to be picked up and how long workflow tasks
 * took, which is what orchestration overhead is made of.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const ET = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface Spread {
  n: number;
  meanMs: number;
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
}

export interface RolloutHops {
  workflows: number;
  /** Activity scheduled -> picked up by a worker (matching and polling). */
  activityDispatch: Spread;
  /** Workflow task scheduled -> picked up. */
  workflowTaskDispatch: Spread;
  /** Workflow task picked up -> its completion recorded (worker activation + reply). */
  workflowTaskRun: Spread;
  /**
   * Rollout start -> the slowest child's first call under way: its first activity scheduled, or,
   * where its calls are local activities (recorded as markers when their workflow task completes,
   * but started as it runs), the start of the workflow task that made its first one.
   */
  startupMs: number;
  /** Last child closed -> rollout closed. */
  teardownMs: number;
  /** History events of the rollout and its children, all together. */
  events: number;
  /** Activities scheduled, and workflow tasks completed, in those histories. */
  activities: number;
  workflowTasks: number;
}

function toMs(t: HistoryEvent['eventTime']): number {
  return Number(t?.seconds ?? 0) * 1000 + Number(t?.nanos ?? 0) / 1e6;
}

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number): number => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return { n: s.length, meanMs: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length), p50Ms: at(0.5), p90Ms: at(0.9), maxMs: s[s.length - 1] ?? 0 };
}

async function events(client: Client, workflowId: string): Promise<HistoryEvent[]> {
  return (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

/** Reads the rollout `rootId` and the children it started. */
export async function rolloutHops(client: Client, rootId: string): Promise<RolloutHops> {
  const root = await events(client, rootId);
  const children = root
    .filter((e) => e.eventType === ET.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED)
    .map((e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ?? '');
  const t0 = toMs(root[0]?.eventTime);
  const activityDispatch: number[] = [];
  const wftDispatch: number[] = [];
  const wftRun: number[] = [];
  let startup = 0;
  let lastChildClose = t0;
  let eventCount = 0;
  let activities = 0;
  for (const history of [root, ...(await Promise.all(children.map((id) => events(client, id))))]) {
    const byId = new Map(history.map((e) => [Number(e.eventId), e]));
    const at = (id: unknown): number => toMs(byId.get(Number(id))?.eventTime);
    eventCount += history.length;
    for (const e of history) {
      if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) activities++;
      const t = toMs(e.eventTime);
      if (e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_STARTED) activityDispatch.push(t - at(e.activityTaskStartedEventAttributes?.scheduledEventId));
      if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_STARTED) wftDispatch.push(t - at(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) wftRun.push(t - at(e.workflowTaskCompletedEventAttributes?.startedEventId));
    }
    if (history !== root) {
      const first = history.find((e) => e.eventType === ET.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED || e.eventType === ET.EVENT_TYPE_MARKER_RECORDED);
      if (first?.eventType === ET.EVENT_TYPE_MARKER_RECORDED) {
        // The marker's task: the last workflow task started before it.
        const started = history.filter((e) => e.eventType === ET.EVENT_TYPE_WORKFLOW_TASK_STARTED && Number(e.eventId) < Number(first.eventId)).pop();
        if (started) startup = Math.max(startup, toMs(started.eventTime) - t0);
      } else if (first) startup = Math.max(startup, toMs(first.eventTime) - t0);
      lastChildClose = Math.max(lastChildClose, toMs(history[history.length - 1]?.eventTime));
    }
  }
  return {
    workflows: 1 + children.length,
    activityDispatch: spread(activityDispatch),
    workflowTaskDispatch: spread(wftDispatch),
    workflowTaskRun: spread(wftRun),
    startupMs: startup,
    teardownMs: toMs(root[root.length - 1]?.eventTime) - lastChildClose,
    events: eventCount,
    activities,
    workflowTasks: wftRun.length,
  };
}

export function formatHops(h: RolloutHops): string {
  const row = (name: string, s: Spread): string =>
    `| ${name} | ${s.n} | ${s.meanMs.toFixed(0)} | ${s.p50Ms.toFixed(0)} | ${s.p90Ms.toFixed(0)} | ${s.maxMs.toFixed(0)} |`;
  return [
    `${h.workflows} workflows; startup (rollout start -> last child's first call under way) ${h.startupMs.toFixed(0)} ms, teardown (last child closed -> rollout closed) ${h.teardownMs.toFixed(0)} ms\n`,
    '| step | count | mean (ms) | p50 | p90 | max |',
    '|---|---:|---:|---:|---:|---:|',
    row('activity scheduled -> started', h.activityDispatch),
    row('workflow task scheduled -> started', h.workflowTaskDispatch),
    row('workflow task started -> completed', h.workflowTaskRun),
  ].join('\n');
}
