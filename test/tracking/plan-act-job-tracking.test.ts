/**
 * planActJob with tracking.mlflow and tracking.tensorboard against a real `mlflow server`: one MLflow
 * run per job (its workflow id, tagged with its role), its rollouts as steps, its updates and its own
 * evaluations, exactly one point each, in MLflow and in the job's TensorBoard event file (read back
 * with TensorBoard's own reader); a dual-mode pair logs two runs. Episodes use the oracle stand-in
 * for generate (fast); training and evaluations are the real ones.
 */
import path from 'node:path';
import type { GenerateInput } from '../../activities/inference';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import type { PlanActJobResult } from '../../src/contracts/plan-act-job';
import { jobEvalLine, jobRolloutLines, type JobMetricsLine } from '../../src/tracking/job-lines';
import { metricsOfLine } from '../../src/tracking/mlflow-batch';
import { tensorboardRunDir } from '../../src/tracking/tensorboard';
import { tinyPlanActConfig } from '../../scripts/lib/scenarios';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { expectedTensorboardPoints, readTensorboardPoints } from '../helpers/tensorboard';
import * as mlflowTest from '../helpers/mlflow';
import { uniqueId } from '../helpers/temporal';

const suite = mlflowTest.trackedTestEnv('job-tracking', { workerProcesses: false });

/** The oracle, except that about half the episodes' planners answer 0 at once: rewards differ within a group, so GRPO trains. */
const mixedQueue = uniqueId('oracle-mixed');

beforeAll(async () => {
  const script = (input: GenerateInput) =>
    input.role === 'planner' && !input.prompt.includes('<|eos|>') && (input.params.seed ?? 0) % 2 === 1 ? { text: 'ANSWER: 0\n', finishReason: 'eos' as const } : undefined;
  await suite.ctx.addWorker({ taskQueue: mixedQueue, activities: createOracleInferenceActivities({ store: suite.ctx.store, latencyMs: 20, script }), maxConcurrentActivityTaskExecutions: 64 });
}, 180_000);

/** The job's MLflow run: status, tags, parameters and "key@step=value" of every point it holds. */
async function mlflowRunOf(experiment: string, workflowId: string) {
  const run = await mlflowTest.mlflowRunOf(suite.mlflow.uri, experiment, workflowId);
  return { ...run, points: mlflowTest.pointsIn(run.history, true) };
}

/** The lines a job's result says it logged: each rollout (and its update) at its count, each evaluation at the count it followed. */
function linesOf(result: PlanActJobResult): JobMetricsLine[] {
  return [...result.rollouts.flatMap((r, i) => jobRolloutLines(i + 1, r)), ...(result.evals ?? []).map(jobEvalLine)];
}
const mlflowPointsOf = (lines: JobMetricsLine[]) => lines.flatMap((l) => metricsOfLine(l, 0)).map((m) => `${m.key}@${m.step}=${m.value}`).sort();

it('a shared job that trains logs one MLflow run and one event file: its rollouts as steps, its updates and evaluations, each point once', async () => {
  const experiment = uniqueId('job-tracked');
  const logDir = path.join(suite.dir, 'tb');
  const config = {
    ...tinyPlanActConfig(experiment, 'shared'),
    eval: { rlEverySteps: 1, maxNewTokens: 8 },
    task: { evalProblems: 2, difficulty: { minTerms: 4, maxTerms: 4, minDigits: 1, maxDigits: 2 } },
    rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 },
    tracking: { mlflow: { uri: suite.mlflow.uri, experiment: 'jobs' }, tensorboard: { dir: logDir } },
  };
  const workflowId = uniqueId('shared-job');
  const handle = await suite.ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [{ role: 'shared', config, rolloutIds: [1, 2], inferenceQueue: mixedQueue }] });
  const result = (await handle.result()) as PlanActJobResult;
  expect(result.rollouts.map((r) => r.training !== undefined)).toEqual([true, true]);
  const lines = linesOf(result);

  const run = await mlflowRunOf('jobs', workflowId);
  expect(run.status).toBe('FINISHED');
  expect(run.tags.get('temporal.workflowId')).toBe(workflowId);
  expect(run.tags.get('durable-rl.role')).toBe('shared');
  expect(run.tags.get('durable-rl.workflow')).toBe('planActJob');
  expect(run.params.get('rollout.mode')).toBe('shared');
  expect(run.points).toEqual(mlflowPointsOf(lines));
  const keys = run.points.map((p) => p.split('=')[0]);
  expect(keys).toEqual(expect.arrayContaining(['rollout/meanReward@1', 'rollout/meanReward@2', 'rollout/rolloutId@2', 'train/loss@1', 'train/loss@2', 'eval/job/plannerAccuracy@0', 'eval/job/plannerAccuracy@2']));
  expect(new Set(keys).size).toBe(keys.length);

  expect(readTensorboardPoints(tensorboardRunDir(logDir, workflowId))).toEqual(expectedTensorboardPoints(lines));
}, 180_000);

it('a dual-mode pair logs one MLflow run per job, tagged with its role, the session rollouts as steps', async () => {
  const experiment = uniqueId('dual-tracked');
  const config = { ...tinyPlanActConfig(experiment, 'dual', { barrierTimeoutSec: 30 }), tracking: { mlflow: { uri: suite.mlflow.uri, experiment: 'jobs' } } };
  const ids = { planner: uniqueId('planner-job'), actor: uniqueId('actor-job') };
  const results = (await Promise.all(
    (['planner', 'actor'] as const).map(async (role) =>
      (await suite.ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: ids[role], args: [{ role, config, rolloutIds: [1], train: false, inferenceQueue: mixedQueue }] })).result(),
    ),
  )) as PlanActJobResult[];
  for (const [i, role] of (['planner', 'actor'] as const).entries()) {
    expect(results[i]!.rollouts[0]).toMatchObject({ outcome: 'joint' });
    const run = await mlflowRunOf('jobs', ids[role]);
    expect(run.status).toBe('FINISHED');
    expect(run.tags.get('durable-rl.role')).toBe(role);
    expect(run.points).toEqual(mlflowPointsOf(linesOf(results[i]!)));
    expect(run.points).toEqual(expect.arrayContaining([expect.stringMatching(/^rollout\/meanReward@1=/), 'rollout/rolloutId@1=1', 'rollout/fellBack@1=0']));
  }
}, 180_000);
