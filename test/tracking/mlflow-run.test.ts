/**
 * trainingRun with tracking.mlflow against a real `mlflow server` (SQLite, a temporary folder): the
 * run's parameters, tags, one point per metric and step of every metrics-file line, and its status;
 * the orchestration worker SIGKILLed just after a logging activity's first write still leaves one
 * point per metric and step; a tracker that does not answer, or refuses the experiment, refuses the
 * run naming the key before anything is logged. The orchestration worker (workflows and the
 * tracking activities) is a separate process, so a test can kill it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { mlflowCall } from '../../src/tracking/mlflow-client';
import { ensureExperiment } from '../../src/tracking/mlflow-run';
import { freePort } from '../../scripts/lib/dev-server';
import { startMlflowOnFreePort, type RunningMlflow } from '../../scripts/lib/mlflow-server';
import * as mlflowTest from '../helpers/mlflow';
import { testEnv, tinyRlConfig, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;
let mlflow: RunningMlflow;
let dir: string;
const runsBefore = process.env.DURABLE_RL_RUNS;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-mlflow-'));
  [mlflow, ctx] = await Promise.all([startMlflowOnFreePort({ dir, logFile: path.join(dir, 'server.log') }), testEnv('mlflow', ['inference', 'training', 'tools'])]);
  // The orchestration worker processes write the metrics files where this test reads them.
  process.env.DURABLE_RL_RUNS = ctx.runsDir;
  workers = workerProcesses(ctx);
}, 180_000);

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
  await mlflow?.stop();
  if (runsBefore === undefined) delete process.env.DURABLE_RL_RUNS;
  else process.env.DURABLE_RL_RUNS = runsBefore;
});

const tracked = (uri: string, experiment: string) => ({ ...tinyRlConfig(), tracking: { mlflow: { uri, experiment } } });

const mlflowRunOf = (experiment: string, workflowId: string) => mlflowTest.mlflowRunOf(mlflow.uri, experiment, workflowId);
const pointsOfMetricsFile = (workflowId: string) => mlflowTest.pointsOfMetricsFile(ctx.runsDir, workflowId);
const { pointsIn } = mlflowTest;

it('refuses a run whose tracking URI does not answer, naming tracking.mlflow.uri, before anything is logged', async () => {
  workers.spawnWorker('orchestration');
  const { handle } = await ctx.startTrainingRun('mlflow-down', tracked(`http://127.0.0.1:${await freePort()}`, 'refused'));
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause!;
  expect(cause.message).toMatch(/tracking\.mlflow\.uri: no MLflow server answered at http:\/\/127\.0\.0\.1:\d+/);
  const scheduled = ((await handle.fetchHistory()).events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
  expect(scheduled).not.toContain('logTracking');
  expect(scheduled).not.toContain('trainSft');
}, 120_000);

it('refuses an experiment name MLflow refuses (a deleted experiment), naming tracking.mlflow.experiment', async () => {
  const ep = { uri: mlflow.uri };
  const made = await ensureExperiment(ep, 'deleted-one');
  if (!('experimentId' in made)) throw new Error(made.problem.message);
  await mlflowCall(ep, 'POST', 'experiments/delete', { experiment_id: made.experimentId });
  expect(await ensureExperiment(ep, 'deleted-one')).toEqual({ problem: { path: 'tracking.mlflow.experiment', message: expect.stringContaining("'deleted-one'") as string } });
});

it("logs the run's parameters, tags, one point per metric and step of every metrics line, and its status", async () => {
  const { workflowId, handle } = await ctx.startTrainingRun('mlflow-run', tracked(mlflow.uri, 'tiny'));
  await handle.result();
  const run = await mlflowRunOf('tiny', workflowId);
  expect(run.status).toBe('FINISHED');
  expect(run.params.get('rl.steps')).toBe('2');
  expect(run.params.get('seed')).toBe('7');
  expect(run.params.get('tracking.mlflow.experiment')).toBe('tiny');
  expect(run.tags.get('temporal.workflowId')).toBe(workflowId);
  expect(run.tags.get('seed')).toBe('7');
  expect(run.tags.get('mlflow.runName')).toBe(workflowId);
  const points = pointsIn(run.history);
  expect(points).toEqual(pointsOfMetricsFile(workflowId));
  expect(points).toEqual(expect.arrayContaining(['sft/loss@1', 'sft/loss@4', 'rl/meanReward@1', 'rl/meanReward@2', 'eval/rl/greedyAccuracy@0', 'eval/rl/greedyAccuracy@2', 'baseline/SFT only/accuracy@0']));
  expect(new Set(points).size).toBe(points.length);
}, 240_000);

it('leaves one point per metric and step when the worker is SIGKILLed right after a logging write, and the write is retried', async () => {
  await workers.killAll();
  const frozen = workers.spawnFreezingWorker('orchestration', 'logTracking:written:1');
  const { workflowId, handle } = await ctx.startTrainingRun('mlflow-kill', tracked(mlflow.uri, 'tiny'));
  expect(await workers.killWhenFrozen('orchestration', frozen)).toBe('FROZEN logTracking {"written":1}');
  await handle.result();
  const run = await mlflowRunOf('tiny', workflowId);
  expect(run.status).toBe('FINISHED');
  const points = pointsIn(run.history);
  expect(points).toEqual(pointsOfMetricsFile(workflowId));
  expect(new Set(points).size).toBe(points.length);
  // The killed write was written again by a second attempt.
  const events = (await handle.fetchHistory()).events ?? [];
  const typeOf = new Map(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name]] : [])));
  const retried = events.flatMap((e) => {
    const a = e.activityTaskStartedEventAttributes;
    return a && (a.attempt ?? 1) > 1 ? [typeOf.get(String(a.scheduledEventId))] : [];
  });
  expect(retried).toContain('logTracking');
}, 300_000);
