/**
 * Issue 36, item 1: a job or run started again under a workflow id it used before, after the source
 * run it starts from (weightsFromRun / init.fromRun, no step: the source's latest checkpoint) has
 * trained further, was handed the first start's published weights and trained results, silently.
 * Now it is refused with a ConfigError naming the id, the result and what differs; started again
 * while the source has not moved, its inputs are the same and it reuses what the first start made.
 *
 * The source is a real trainingRun held after its first SFT chunk (its state save at step 2, an
 * orchestration activity: the training queue's one slot must stay free for the others) until the
 * test lets it go on, so the jobs start while the source is at step 2 and again once it is at step 4.
 */
import { ActivityFailure, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { names } from '../../src/store/run-names';
import type { PlanActJobInput, PlanActJobResult } from '../../src/contracts/plan-act-job';
import type { RunConfigInput } from '../../src/config/schema';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { testEnv, tinyRlConfig, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { holdRunStateSave } from '../helpers/hold-run';

const sourceId = uniqueId('source');
const hold = holdRunStateSave(sourceId, 2);

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('reused-id', undefined, { activityInterceptors: [hold.interceptor] });
});

afterAll(async () => {
  hold.release();
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

it('a job and a run started again under their ids after their source trained further are refused, naming what differs; with the same inputs they reuse', async () => {
  const source = await ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: sourceId, args: [tinyRunConfig()] });
  await waitFor('the source at step 2', () => ctx.store.getName(names.checkpoint(sourceId, 2)), 120_000);

  // A shared planActJob F2 with weightsFromRun: source, rolloutIds [1] (the reproduction) ...
  const jobId = uniqueId('F2');
  const jobConfig: RunConfigInput = {
    experiment: 'reused-id',
    seed: 7,
    model: tinyRunConfig().model!,
    eval: { rlEverySteps: 0 },
    rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 12 },
    rollout: { mode: 'shared', maxTurns: 2 },
    timeouts: { heartbeatSec: 10 },
  };
  const jobInput: PlanActJobInput = { role: 'shared', config: jobConfig, rolloutIds: [1], weightsFromRun: sourceId };
  const startJob = () => ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: jobId, args: [jobInput] });
  // ... and a trainingRun with init.fromRun: source (RL only), each under a fixed id.
  const runId = uniqueId('from-source');
  const runConfig = { ...tinyRlConfig({ steps: 1 }), sft: { steps: 0 }, init: { fromRun: sourceId } };
  const startRun = () => ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: runId, args: [runConfig] });

  const [job1, run1] = await Promise.all([startJob().then((h) => h.result() as Promise<PlanActJobResult>), startRun().then((h) => h.result() as Promise<TrainingRunResult>)]);
  // Both started from the source's step 2 and trained one RL step from it.
  expect(job1.rollouts[0]!.training).toMatchObject({ step: 3, weightVersion: 1 });
  expect(run1.checkpoint?.step).toBe(3);
  const published = { job: await ctx.store.getName(names.weights(jobId, 0)), run: await ctx.store.getName(names.weights(runId, 0)) };

  // Started again while the source has not moved: the same inputs, so the same results.
  const [job2, run2] = await Promise.all([startJob().then((h) => h.result() as Promise<PlanActJobResult>), startRun().then((h) => h.result() as Promise<TrainingRunResult>)]);
  expect(job2.weights).toEqual(job1.weights);
  expect(run2.checkpoint).toEqual(run1.checkpoint);

  // The source trains on to step 4; the same starts again now resolve its step 4.
  hold.release();
  await source.result();
  /** A run's copy of the source's checkpoint at `step`. */
  const copy = async (id: string, step: number) => (await ctx.store.getName(names.checkpoint(id, step)))!.sha256;

  const jobErr = failureOf(await startJob().then((h) => h.result()).catch((e: unknown) => e));
  expect(jobErr.type).toBe('ConfigError');
  expect(jobErr.nonRetryable).toBe(true);
  expect(jobErr.message).toContain(
    `published weights v0 of workflow id '${jobId}' (${names.weights(jobId, 0)}) came from checkpoint ${await copy(jobId, 2)} (step 2); this start's checkpoint is ${await copy(jobId, 4)} (step 4)`,
  );
  expect(jobErr.message).toMatch(/start this one under another workflow id/);

  const runErr = failureOf(await startRun().then((h) => h.result()).catch((e: unknown) => e));
  expect(runErr.type).toBe('ConfigError');
  expect(runErr.message).toContain(
    `published weights v0 of workflow id '${runId}' (${names.weights(runId, 0)}) came from checkpoint ${await copy(runId, 2)} (step 2); this start's checkpoint is ${await copy(runId, 4)} (step 4)`,
  );

  // What the first start published is left as it was.
  expect({ job: await ctx.store.getName(names.weights(jobId, 0)), run: await ctx.store.getName(names.weights(runId, 0)) }).toEqual(published);
}, 480_000);
