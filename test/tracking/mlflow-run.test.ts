/**
 * trainingRun with tracking.mlflow against a real `mlflow server` (SQLite, a temporary folder): the
 * run's parameters, tags, one point per metric and step of every metrics-file line, and its status;
 * the orchestration worker SIGKILLed just after a logging activity's first write still leaves one
 * point per metric and step; a tracker that does not answer, or refuses the experiment, refuses the
 * run naming the key before anything is logged. The orchestration worker (workflows and the
 * tracking activities) is a separate process, so a test can kill it.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { mlflowCall } from '../../src/tracking/mlflow-client';
import { ensureExperiment } from '../../src/tracking/mlflow-run';
import { freePort } from '../../scripts/lib/dev-server';
import { activityStarts, scheduledActivityTypes } from '../helpers/history';
import * as mlflowTest from '../helpers/mlflow';
import { tinyRlConfig } from '../helpers/temporal';

const suite = mlflowTest.trackedTestEnv('mlflow', { queues: ['inference', 'training', 'tools'] });

const tracked = (uri: string, experiment: string) => ({ ...tinyRlConfig(), tracking: { mlflow: { uri, experiment } } });

const mlflowRunOf = (experiment: string, workflowId: string) => mlflowTest.mlflowRunOf(suite.mlflow.uri, experiment, workflowId);
const pointsOfMetricsFile = (workflowId: string) => mlflowTest.pointsOfMetricsFile(suite.ctx.runsDir, workflowId);
const { pointsIn } = mlflowTest;

it('refuses a run whose tracking URI does not answer, naming tracking.mlflow.uri, before anything is logged', async () => {
  suite.workers.spawnWorker('orchestration');
  const { handle } = await suite.ctx.startTrainingRun('mlflow-down', tracked(`http://127.0.0.1:${await freePort()}`, 'refused'));
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause!;
  expect(cause.message).toMatch(/tracking\.mlflow\.uri: no MLflow server answered at http:\/\/127\.0\.0\.1:\d+/);
  const scheduled = scheduledActivityTypes(await handle.fetchHistory());
  expect(scheduled).not.toContain('logTracking');
  expect(scheduled).not.toContain('trainSft');
}, 120_000);

it('refuses an experiment name MLflow refuses (a deleted experiment), naming tracking.mlflow.experiment', async () => {
  const ep = { uri: suite.mlflow.uri };
  const made = await ensureExperiment(ep, 'deleted-one');
  if (!('experimentId' in made)) throw new Error(made.problem.message);
  await mlflowCall(ep, 'POST', 'experiments/delete', { experiment_id: made.experimentId });
  expect(await ensureExperiment(ep, 'deleted-one')).toEqual({ problem: { path: 'tracking.mlflow.experiment', message: expect.stringContaining("'deleted-one'") as string } });
});

it("logs the run's parameters, tags, one point per metric and step of every metrics line, and its status", async () => {
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-run', tracked(suite.mlflow.uri, 'tiny'));
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
  await suite.workers.killAll();
  const frozen = suite.workers.spawnFreezingWorker('orchestration', 'logTracking:written:1');
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-kill', tracked(suite.mlflow.uri, 'tiny'));
  expect(await suite.workers.killWhenFrozen('orchestration', frozen)).toBe('FROZEN logTracking {"written":1}');
  await handle.result();
  const run = await mlflowRunOf('tiny', workflowId);
  expect(run.status).toBe('FINISHED');
  const points = pointsIn(run.history);
  expect(points).toEqual(pointsOfMetricsFile(workflowId));
  expect(new Set(points).size).toBe(points.length);
  // The killed write was written again by a second attempt.
  const retried = activityStarts(await handle.fetchHistory()).flatMap((s) => (s.attempt > 1 ? [s.type] : []));
  expect(retried).toContain('logTracking');
}, 300_000);
