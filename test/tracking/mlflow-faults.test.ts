/**
 * trainingRun with tracking.mlflow when things go wrong, against a real `mlflow server` and real
 * Temporal: the orchestration worker (workflows and the logging activity; a process of its own)
 * SIGKILLed mid-RL with a step's points written and not confirmed; the MLflow server stopped for a
 * while mid-run and started again on its store; a run that fails (FAILED) and one cancelled
 * (KILLED); a run terminated and resumed from its saved state, continuing as new after every unit,
 * which redoes steps MLflow holds already. Each ends with one point per metric and step.
 */
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { RunProgress } from '../../src/contracts/training-run';
import { mlflowAnswers, startMlflowServer } from '../../scripts/lib/mlflow-server';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { activityStarts } from '../helpers/history';
import { mlflowHolds, mlflowRunOf, mlflowRunsTagged, pointsIn, pointsOfMetricsFile, trackedTestEnv } from '../helpers/mlflow';
import { tinyRlConfig } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';

const EXPERIMENT = 'faults';

/** The in-process training worker fails trainGrpo for good in runs whose id starts so (a run that ends FAILED). */
const FAILING_RUN = 'mlflow-failing';
const failGrpo: ActivityInterceptorsFactory = () => ({
  inbound: {
    async execute(input, next) {
      const { activityType, workflowExecution } = Context.current().info;
      if (activityType === 'trainGrpo' && workflowExecution?.workflowId.startsWith(FAILING_RUN)) throw ApplicationFailure.nonRetryable('trainGrpo failed on purpose (the test)', 'TestFailure');
      return next(input);
    },
  },
});

const suite = trackedTestEnv('mlflow-faults', { queues: ['inference', 'training', 'tools'], activityInterceptors: [failGrpo] });

const tracked = (rl: Record<string, unknown> = {}) => ({ ...tinyRlConfig(rl), tracking: { mlflow: { uri: suite.mlflow.uri, experiment: EXPERIMENT } } });
const runOf = (workflowId: string) => mlflowRunOf(suite.mlflow.uri, EXPERIMENT, workflowId);
const holds = (workflowId: string, key: string, step: number) => mlflowHolds(suite.mlflow.uri, EXPERIMENT, workflowId, key, step);

/** MLflow holds exactly the metrics file's points, each once, with the file's values. */
async function expectEveryPointOnce(workflowId: string): Promise<Awaited<ReturnType<typeof runOf>>> {
  const run = await runOf(workflowId);
  expect(pointsIn(run.history, true)).toEqual(pointsOfMetricsFile(suite.ctx.runsDir, workflowId, true));
  const points = pointsIn(run.history);
  expect(new Set(points).size).toBe(points.length);
  return run;
}

async function healthyOrchestration(): Promise<void> {
  await suite.workers.killAll();
  suite.workers.spawnWorker('orchestration');
}

it('kills the orchestration worker mid-RL with a step\'s points written and not confirmed, restarts it: one point per metric and step, FINISHED', async () => {
  await suite.workers.killAll();
  // Frozen (the whole process: workflow tasks and activities) right after RL step 1's batch reached MLflow, before its activity completes.
  const frozen = suite.workers.spawnFreezingWorker('orchestration', 'logTracking:written:1', { DURABLE_RL_FREEZE_IF: '"kind":"rl","step":1,' });
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-kill-rl', tracked({ steps: 3 }));
  expect(await frozen.frozen).toBe('FROZEN logTracking {"written":1}');
  // Mid-run: RL step 1 is in MLflow, step 2 not trained yet.
  expect(await holds(workflowId, 'rl/meanReward', 1)).toBe(true);
  expect(pointsOfMetricsFile(suite.ctx.runsDir, workflowId)).not.toContain('rl/meanReward@2');
  await suite.workers.killWhenFrozen('orchestration', frozen);
  await handle.result();
  const run = await expectEveryPointOnce(workflowId);
  expect(run.status).toBe('FINISHED');
  expect(pointsIn(run.history)).toEqual(expect.arrayContaining(['rl/meanReward@1', 'rl/meanReward@3', 'eval/rl/greedyAccuracy@3']));
  const starts = activityStarts(await handle.fetchHistory());
  // The killed write was written again by a later attempt.
  expect(starts.filter((s) => s.type === 'logTracking' && s.attempt > 1 && s.input.includes('"kind":"rl","step":1,'))).not.toHaveLength(0);
}, 180_000);

it('trains on while the MLflow server is down mid-run, and fills the gap once it is back: every point once, FINISHED', async () => {
  await healthyOrchestration();
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-outage', tracked({ steps: 3 }));
  await waitFor('the first SFT points in MLflow', async () => (await holds(workflowId, 'sft/loss', 2)) || undefined, 60_000);
  await suite.mlflow.stop();
  const downAt = Date.now();
  // Training does not wait for MLflow: the run gets to its end while nothing answers.
  await waitFor('the run at its end', async () => ((await handle.query<RunProgress>('progress')).phase === 'done' ? true : undefined), 120_000);
  expect(await mlflowAnswers(suite.mlflow.uri)).toBe(false);
  expect(pointsOfMetricsFile(suite.ctx.runsDir, workflowId)).toEqual(expect.arrayContaining(['rl/meanReward@3', 'baseline/SFT only/accuracy@0']));
  // Down for 25 s at least, then back on its store and port.
  await new Promise((r) => setTimeout(r, Math.max(0, 25_000 - (Date.now() - downAt))));
  const downFor = Date.now() - downAt;
  suite.mlflow = await startMlflowServer({ port: Number(new URL(suite.mlflow.uri).port), dir: suite.dir, logFile: path.join(suite.dir, 'server.log') });
  await handle.result();
  const run = await expectEveryPointOnce(workflowId);
  expect(run.status).toBe('FINISHED');
  expect(downFor).toBeGreaterThanOrEqual(25_000);
  // Writes failed while it was down and were retried.
  expect(activityStarts(await handle.fetchHistory()).filter((s) => s.type === 'logTracking' && s.attempt > 1)).not.toHaveLength(0);
}, 300_000);

it('marks a run that fails FAILED, with every point it logged once', async () => {
  await healthyOrchestration();
  const { workflowId, handle } = await suite.ctx.startTrainingRun(FAILING_RUN, tracked());
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const run = await expectEveryPointOnce(workflowId);
  expect(run.status).toBe('FAILED');
  expect(pointsIn(run.history)).toEqual(expect.arrayContaining(['sft/loss@4', 'eval/rl/greedyAccuracy@0']));
  expect(pointsIn(run.history).filter((p) => p.startsWith('rl/'))).toEqual([]);
}, 120_000);

it('marks a cancelled run KILLED, with each point it logged once', async () => {
  await healthyOrchestration();
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-cancel', tracked({ steps: 4 }));
  await waitFor('RL step 1 in MLflow', async () => (await holds(workflowId, 'rl/meanReward', 1)) || undefined, 90_000);
  await handle.cancel();
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const run = await runOf(workflowId);
  expect(run.status).toBe('KILLED');
  const points = pointsIn(run.history);
  expect(new Set(points).size).toBe(points.length);
  // A batch in flight when the run was cancelled may be missing; nothing else is, and nothing is there twice.
  expect(pointsOfMetricsFile(suite.ctx.runsDir, workflowId)).toEqual(expect.arrayContaining(points));
  expect(points).toEqual(expect.arrayContaining(['sft/loss@4', 'rl/meanReward@1']));
}, 120_000);

it('resumed from its saved state (continuing as new after every unit), a run redoes steps MLflow holds and leaves one point per metric and step, in the same MLflow run', async () => {
  await suite.workers.killAll();
  // The save after RL step 1 never happens: its points are logged, the saved state is the end of SFT.
  const hung = suite.workers.spawnFreezingWorker('orchestration', 'saveRunState:start:1', { DURABLE_RL_FREEZE_IF: '"rlDone":1', DURABLE_RL_FREEZE_HOW: 'hang' });
  const config = { ...tracked(), workflow: { continueAsNewEvery: 1 } };
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-resume', config);
  await hung.frozen;
  // Everything the first attempt logged is in MLflow (RL step 1 included) before it is terminated.
  const first = await waitFor(
    "the first attempt's points in MLflow",
    async () => {
      const run = await runOf(workflowId);
      const held = pointsIn(run.history, true);
      return held.some((p) => p.startsWith('rl/meanReward@1=')) && JSON.stringify(held) === JSON.stringify(pointsOfMetricsFile(suite.ctx.runsDir, workflowId, true)) ? run : undefined;
    },
    60_000,
  );
  await handle.terminate('the test resumes it from its saved state');
  await suite.workers.killHard(hung.child);
  suite.workers.spawnWorker('orchestration');
  const resumed = await suite.ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [config, { fromSavedState: true }] });
  await resumed.result();
  // The resumed run's first execution redid RL step 1 (its saved state had none).
  const redone = activityStarts(await suite.ctx.env.client.workflow.getHandle(workflowId, resumed.firstExecutionRunId).fetchHistory());
  expect(redone.map((s) => s.type)).toContain('trainGrpo');
  const run = await expectEveryPointOnce(workflowId);
  expect(run.status).toBe('FINISHED');
  expect(run.runId).toBe(first.runId);
  expect(await mlflowRunsTagged(suite.mlflow.uri, run.experimentId, workflowId)).toBe(1);
  // The redone points are the first attempt's (its time, its values), as in the metrics file.
  for (const key of ['rl/meanReward', 'eval/rl/greedyAccuracy', 'sft/loss']) expect(run.history.get(key)!.filter((p) => p.step <= 1)).toEqual(first.history.get(key)!.filter((p) => p.step <= 1));
  expect(pointsIn(run.history)).toEqual(expect.arrayContaining(['rl/meanReward@1', 'rl/meanReward@2']));
}, 180_000);
