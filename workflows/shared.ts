/**
 * Names every process agrees on: task queues, queries, signals and updates.
 * Imported by workflows, workers and clients alike, so it holds definitions only.
 */
import { defineQuery } from '@temporalio/workflow';
import type { RunProgress } from './training-run-types';

/** Task queues by resource, so each kind of worker can be scaled on its own hardware. */
export const TASK_QUEUES = {
  /** Workflows and light activities (datasets, bookkeeping). */
  orchestration: 'durable-rl-orchestration',
  /** generate / evaluate: GPU-bound in a real deployment, one slot per device. */
  inference: 'durable-rl-inference',
  /** trainStep / publishWeights: one slot per device. */
  training: 'durable-rl-training',
  /** Tool calls (calculator, sandboxes). */
  tools: 'durable-rl-tools',
} as const;
export type TaskQueueName = keyof typeof TASK_QUEUES;

export const progressQuery = defineQuery<RunProgress>('progress');
