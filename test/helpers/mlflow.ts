/**
 * What a real MLflow server holds for a training run, read back over its REST API, and the points a
 * run's metrics file asks for: the tracking tests compare the two (one point per metric and step).
 * Also the tracking tests' shared set-up (trackedTestEnv).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { metricsFilePath } from '../../activities/run-records';
import { startMlflowOnFreePort, type RunningMlflow } from '../../scripts/lib/mlflow-server';
import type { TaskQueueName } from '../../workflows/task-queues';
import type { MetricsLine } from '../../src/report';
import { metricsOfLine } from '../../src/tracking/mlflow-batch';
import { mlflowCall } from '../../src/tracking/mlflow-client';
import { ensureExperiment, findRun, WORKFLOW_ID_TAG } from '../../src/tracking/mlflow-run';
import { testEnv, type TestEnv } from './temporal';
import { workerProcesses } from './worker-processes';

export interface Point {
  step: number;
  timestamp: number;
  value: number;
}

/** The MLflow run of `workflowId`: status, parameters, tags and every metric's whole history. */
export async function mlflowRunOf(uri: string, experiment: string, workflowId: string) {
  const ep = { uri };
  const exp = await ensureExperiment(ep, experiment);
  if (!('experimentId' in exp)) throw new Error(exp.problem.message);
  const runId = await findRun(ep, exp.experimentId, workflowId);
  if (!runId) throw new Error(`no MLflow run for ${workflowId}`);
  type Kv = { key: string; value: string };
  const { run } = await mlflowCall<{ run: { info: { status: string }; data: { params?: Kv[]; tags?: Kv[]; metrics?: Array<{ key: string }> } } }>(ep, 'GET', 'runs/get', { run_id: runId });
  const history = new Map<string, Point[]>();
  for (const { key } of run.data.metrics ?? []) {
    const res = await mlflowCall<{ metrics?: Point[] }>(ep, 'GET', 'metrics/get-history', { run_id: runId, metric_key: key, max_results: 10_000 });
    history.set(key, (res.metrics ?? []).map((m) => ({ step: Number(m.step), timestamp: Number(m.timestamp), value: m.value })));
  }
  const byKey = (kvs: Kv[] | undefined) => new Map((kvs ?? []).map((p) => [p.key, p.value]));
  return { runId, experimentId: exp.experimentId, status: run.info.status, params: byKey(run.data.params), tags: byKey(run.data.tags), history };
}

/** How many MLflow runs (any state) carry `workflowId`'s tag in the experiment. */
export async function mlflowRunsTagged(uri: string, experimentId: string, workflowId: string): Promise<number> {
  const res = await mlflowCall<{ runs?: unknown[] }>({ uri }, 'POST', 'runs/search', { experiment_ids: [experimentId], filter: `tags.\`${WORKFLOW_ID_TAG}\` = '${workflowId}'`, run_view_type: 'ALL', max_results: 10 });
  return res.runs?.length ?? 0;
}

/** "key@step" (with `=value` when asked) of every point MLflow holds, sorted: a repeated point shows twice. */
export function pointsIn(history: Map<string, Point[]>, withValues = false): string[] {
  return [...history].flatMap(([key, points]) => points.map((p) => `${key}@${p.step}${withValues ? `=${p.value}` : ''}`)).sort();
}

/** The same for every point the run's metrics file asks for. */
export function pointsOfMetricsFile(runsDir: string, workflowId: string, withValues = false): string[] {
  const lines = fs.readFileSync(metricsFilePath(runsDir, workflowId), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as MetricsLine);
  return lines.flatMap((l) => metricsOfLine(l, 0)).map((m) => `${m.key}@${m.step}${withValues ? `=${m.value}` : ''}`).sort();
}

/** Whether MLflow holds a point of `key` at `step` for the run yet (polled by tests that act mid-run). */
export async function mlflowHolds(uri: string, experiment: string, workflowId: string, key: string, step: number): Promise<boolean> {
  const ep = { uri };
  const exp = await ensureExperiment(ep, experiment);
  const runId = 'experimentId' in exp ? await findRun(ep, exp.experimentId, workflowId) : undefined;
  if (!runId) return false;
  const res = await mlflowCall<{ metrics?: Point[] }>(ep, 'GET', 'metrics/get-history', { run_id: runId, metric_key: key, max_results: 10_000 });
  return (res.metrics ?? []).some((p) => Number(p.step) === step);
}

export interface TrackedTestEnv {
  /** A temporary folder of the test's own (the MLflow server's store and log are in it). */
  readonly dir: string;
  readonly ctx: TestEnv;
  /** The MLflow server; a test that starts another on the same store sets it here, so the teardown stops that one. */
  mlflow: RunningMlflow;
  readonly workers: ReturnType<typeof workerProcesses>;
}

/**
 * The tracking tests' set-up, as beforeAll/afterAll of the calling file: a temporary folder
 * (durable-rl-<label>-…), a real `mlflow server` on a free port with its store in it (unless
 * `mlflow: false`), testEnv(label, queues) and, unless `workerProcesses: false`, the worker processes
 * of workerProcesses(ctx) with DURABLE_RL_RUNS at ctx.runsDir (they write the metrics files where
 * the test reads them; restored at the end). Its fields are there once beforeAll has run.
 */
export function trackedTestEnv(
  label: string,
  opts: { queues?: readonly TaskQueueName[]; activityInterceptors?: ActivityInterceptorsFactory[]; mlflow?: false | { basicAuth?: { adminPassword: string } }; workerProcesses?: boolean } = {},
): TrackedTestEnv {
  let dir: string | undefined;
  let ctx: TestEnv | undefined;
  let mlflow: RunningMlflow | undefined;
  let workers: ReturnType<typeof workerProcesses> | undefined;
  const spawnsWorkers = opts.workerProcesses ?? true;
  const runsBefore = process.env.DURABLE_RL_RUNS;
  const ready = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw new Error(`trackedTestEnv('${label}'): no ${what} (turned off in its options, or asked for before beforeAll ran)`);
    return value;
  };

  beforeAll(async () => {
    const tmp = (dir = fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${label}-`)));
    [mlflow, ctx] = await Promise.all([
      opts.mlflow === false ? undefined : startMlflowOnFreePort({ dir: tmp, logFile: path.join(tmp, 'server.log'), ...opts.mlflow }),
      testEnv(label, opts.queues, opts.activityInterceptors ? { activityInterceptors: opts.activityInterceptors } : {}),
    ]);
    if (!spawnsWorkers) return;
    process.env.DURABLE_RL_RUNS = ctx.runsDir;
    workers = workerProcesses(ctx);
  }, 180_000);

  afterAll(async () => {
    await workers?.killAll();
    await ctx?.stop();
    await mlflow?.stop();
    if (!spawnsWorkers) return;
    if (runsBefore === undefined) delete process.env.DURABLE_RL_RUNS;
    else process.env.DURABLE_RL_RUNS = runsBefore;
  });

  return {
    get dir() {
      return ready('folder', dir);
    },
    get ctx() {
      return ready('test environment', ctx);
    },
    get mlflow() {
      return ready('MLflow server', mlflow);
    },
    set mlflow(server: RunningMlflow) {
      mlflow = server;
    },
    get workers() {
      return ready('worker processes', workers);
    },
  };
}
