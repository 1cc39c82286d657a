/**
 * Task queues every process agrees on: workers poll them, workflows and clients send work to them.
 * Imported by workflows, workers and clients alike, so it holds definitions only.
 */
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

/**
 * The training queue of each trainer backend (trainer.backend), one row each: the tfjs trainer runs
 * in the TypeScript workers, the PyTorch worker (python/durable_rl_torch, `npm run worker:torch`)
 * polls a queue of its own, so a run picks its trainer by where its training activities go.
 */
export const TRAINER_QUEUES = {
  tfjs: TASK_QUEUES.training,
  torch: 'durable-rl-training-torch',
} as const;
