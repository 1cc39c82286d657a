/**
 * Issue 36, item 1, on the torch trainer: a trainingRun with trainer.backend torch and init.fromRun
 * (no step: the source's latest checkpoint), started again under its workflow id after the source
 * trained further, was handed the first start's published weights (the torch worker's publishWeights
 * found the name taken) and played them while it trained the source's newer checkpoint. Now the torch
 * worker refuses it as the tfjs trainer does (test/workflows/reused-workflow-id.test.ts): a
 * non-retryable ConfigError naming the id, the result and what differs; started again while the source
 * has not moved, its inputs are the same and it reuses what the first start made.
 *
 * The TypeScript workers serve every queue but training, the torch worker (a real OS process) the torch
 * training queue. The source, a torch run too, is held after its first SFT chunk (its state save at
 * step 2, an orchestration activity: the torch worker's one slot stays free for the dependent run).
 */
import { ActivityFailure, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { names } from '../../src/store/run-names';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { testEnv, tinyRlConfig, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { holdRunStateSave } from '../helpers/hold-run';
import { workerProcesses } from '../helpers/worker-processes';

const sourceId = uniqueId('torch-source');
const hold = holdRunStateSave(sourceId, 2);

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  ctx = await testEnv('torch-reused-id', ['orchestration', 'inference', 'tools'], { activityInterceptors: [hold.interceptor] });
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  hold.release();
  await workers?.killAll();
  await ctx?.stop();
});

/** The ApplicationFailure a failed workflow ended with: its own, or its failed activity's. */
function failureOf(err: unknown): ApplicationFailure {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  const failure = cause instanceof ActivityFailure ? cause.cause : cause;
  expect(failure).toBeInstanceOf(ApplicationFailure);
  return failure as ApplicationFailure;
}

it('a torch run started again under its id after its init.fromRun source trained further is refused, naming what differs; with the same inputs it reuses', async () => {
  const torch = workers.spawnTorchWorker();
  await torch.serving;
  const trainer = { backend: 'torch' as const };
  const source = await ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: sourceId, args: [{ ...tinyRunConfig(), trainer }] });
  await waitFor('the source at step 2', () => ctx.store.getName(names.checkpoint(sourceId, 2)), 180_000);

  // A trainingRun with init.fromRun: source (RL only, one step) under a fixed id.
  const runId = uniqueId('torch-from-source');
  const runConfig = { ...tinyRlConfig({ steps: 1 }), sft: { steps: 0 }, init: { fromRun: sourceId }, trainer };
  const startRun = () => ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: runId, args: [runConfig] });

  const run1 = (await (await startRun()).result()) as TrainingRunResult;
  // Started from the source's step 2, and trained one RL step from it.
  expect(run1.checkpoint?.step).toBe(3);
  const published = await ctx.store.getName(names.weights(runId, 0));

  // Started again while the source has not moved: the same inputs, so the same results.
  const run2 = (await (await startRun()).result()) as TrainingRunResult;
  expect(run2.checkpoint).toEqual(run1.checkpoint);
  expect(run2.weights).toEqual(run1.weights);

  // The source trains on to step 4; the same start again now resolves its step 4.
  hold.release();
  await source.result();
  const copy = async (step: number) => (await ctx.store.getName(names.checkpoint(runId, step)))!.sha256;

  const err = failureOf(await startRun().then((h) => h.result()).catch((e: unknown) => e));
  expect(err.type).toBe('ConfigError');
  expect(err.nonRetryable).toBe(true);
  expect(err.message).toContain(
    `published weights v0 of workflow id '${runId}' (${names.weights(runId, 0)}) came from checkpoint ${await copy(2)} (step 2); this start's checkpoint is ${await copy(4)} (step 4)`,
  );
  expect(err.message).toMatch(/start this one under another workflow id/);
  // What the first start published is left as it was.
  expect(await ctx.store.getName(names.weights(runId, 0))).toEqual(published);
  await workers.killHard(torch.child);
}, 600_000);
