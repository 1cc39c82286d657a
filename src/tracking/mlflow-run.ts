/**
 * One training run as one MLflow run: the experiment checked (made if missing), the run found by its
 * workflow id's tag or made, its points logged and its status set. Every call is idempotent, so a
 * retried activity leaves what one call leaves: a retried `open` finds the run the first made, a
 * retried log-batch writes points MLflow already holds (same key, step, timestamp and value).
 */
import type { KeyProblem } from '../config/refusals';
import type { MlflowRunRef } from '../contracts/tracking';

export type { MlflowRunRef };
import { mlflowCall, mlflowCredentials, MlflowError, type MlflowEndpoint } from './mlflow-client';
import { splitBatch, tagValue, type MlflowBatch, type MlflowKeyValue, type MlflowMetric } from './mlflow-batch';

/** The tag that names a run's workflow id: the key a retried or resumed run finds its MLflow run by. */
export const WORKFLOW_ID_TAG = 'temporal.workflowId';

export type MlflowRunStatus = 'RUNNING' | 'FINISHED' | 'FAILED' | 'KILLED';


interface Experiment {
  experiment_id: string;
  lifecycle_stage?: string;
}

/**
 * The experiment's id, made if it does not exist; a refusal becomes a problem naming the key it is
 * about: the URI (nothing answered, the token refused) or the experiment name.
 */
export async function ensureExperiment(ep: MlflowEndpoint, name: string): Promise<{ experimentId: string } | { problem: KeyProblem }> {
  const uriProblem = (err: MlflowError): { problem: KeyProblem } => ({
    problem: {
      path: 'tracking.mlflow.uri',
      message: err.unauthorized
        ? `${err.message} (sent: ${mlflowCredentials(ep).described}): set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN, to credentials this server accepts`
        : err.message,
    },
  });
  let found: Experiment | undefined;
  try {
    found = (await mlflowCall<{ experiment: Experiment }>(ep, 'GET', 'experiments/get-by-name', { experiment_name: name })).experiment;
  } catch (err) {
    if (!(err instanceof MlflowError)) throw err;
    if (err.errorCode !== 'RESOURCE_DOES_NOT_EXIST') {
      return err.unreachable || err.unauthorized || err.status === undefined || err.status >= 500 || err.status === 404 ? uriProblem(err) : { problem: { path: 'tracking.mlflow.experiment', message: err.message } };
    }
  }
  if (found) {
    if (found.lifecycle_stage === 'deleted') {
      return { problem: { path: 'tracking.mlflow.experiment', message: `MLflow experiment '${name}' at ${ep.uri} is deleted: restore it, or name another` } };
    }
    return { experimentId: found.experiment_id };
  }
  try {
    return { experimentId: (await mlflowCall<{ experiment_id: string }>(ep, 'POST', 'experiments/create', { name })).experiment_id };
  } catch (err) {
    if (!(err instanceof MlflowError)) throw err;
    if (err.unreachable || err.unauthorized) return uriProblem(err);
    // Made meanwhile by another run's start: look again.
    if (err.errorCode === 'RESOURCE_ALREADY_EXISTS') {
      const again = await mlflowCall<{ experiment: Experiment }>(ep, 'GET', 'experiments/get-by-name', { experiment_name: name }).catch(() => undefined);
      if (again && again.experiment.lifecycle_stage !== 'deleted') return { experimentId: again.experiment.experiment_id };
    }
    return { problem: { path: 'tracking.mlflow.experiment', message: `MLflow refused experiment name '${name}': ${err.message}` } };
  }
}

/** The MLflow run of `workflowId` in the experiment, if one was made (a retried or resumed start). */
export async function findRun(ep: MlflowEndpoint, experimentId: string, workflowId: string): Promise<string | undefined> {
  return findRunTagged(ep, experimentId, [{ key: WORKFLOW_ID_TAG, value: workflowId }]);
}

/** The first run made in the experiment with every one of `tags` (the key a retried start finds its run by). */
async function findRunTagged(ep: MlflowEndpoint, experimentId: string, tags: MlflowKeyValue[]): Promise<string | undefined> {
  const quote = (v: string) => `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  const filter = tags.map((t) => `tags.\`${t.key}\` = ${quote(t.value)}`).join(' and ');
  const res = await mlflowCall<{ runs?: Array<{ info: { run_id: string; start_time?: number } }> }>(ep, 'POST', 'runs/search', {
    experiment_ids: [experimentId],
    filter,
    run_view_type: 'ALL',
    max_results: 10,
    order_by: ['attributes.start_time ASC'],
  });
  // Two would be made only by two starts at once of one workflow id, which Temporal does not run: the first is the run.
  return res.runs?.[0]?.info.run_id;
}

/** The run found by `keyTags` in the experiment, or made with them, its name and start time. */
async function findOrMakeRun(ep: MlflowEndpoint, experimentId: string, keyTags: MlflowKeyValue[], name: string, startTime: number): Promise<string> {
  const found = await findRunTagged(ep, experimentId, keyTags);
  if (found) return found;
  const made = await mlflowCall<{ run: { info: { run_id: string } } }>(ep, 'POST', 'runs/create', { experiment_id: experimentId, run_name: name, start_time: startTime, tags: keyTags });
  return made.run.info.run_id;
}

export interface OpenRunInput {
  experimentId: string;
  workflowId: string;
  /** Workflow time the run started (ms). */
  startTime: number;
  params: MlflowKeyValue[];
  tags: MlflowKeyValue[];
}

/** The run of `workflowId` (found, or made with its name, tags and start time), with its parameters and tags logged, marked RUNNING. */
export async function openRun(ep: MlflowEndpoint, input: OpenRunInput): Promise<MlflowRunRef> {
  const tags = [{ key: WORKFLOW_ID_TAG, value: input.workflowId }, ...input.tags].map((t) => ({ key: t.key, value: tagValue(t.value) }));
  const runId = await findOrMakeRun(ep, input.experimentId, tags.slice(0, 1), input.workflowId, input.startTime);
  const ref = { uri: ep.uri, experimentId: input.experimentId, runId };
  await logBatch(ep, ref, { params: input.params, tags });
  // A run resumed after it was marked failed or killed is running again.
  await setStatus(ep, ref, 'RUNNING');
  return ref;
}

/** MLflow's tag of a nested run: the UI shows a baseline's run under the main one. */
export const PARENT_RUN_TAG = 'mlflow.parentRunId';
/** Which compare.* baseline a child run is (moreSft, filteredSft, rft): with the parent, the key it is found by. */
export const BASELINE_TAG = 'durable-rl.baseline';

export interface OpenChildRunInput {
  parent: MlflowRunRef;
  baseline: string;
  /** The run's name: the baseline's run key (<workflow id>~rft). */
  name: string;
  startTime: number;
  params: MlflowKeyValue[];
}

/** A baseline's run, a child of `parent` (found by the parent and baseline, or made: RUNNING), with its parameters. */
export async function openChildRun(ep: MlflowEndpoint, input: OpenChildRunInput): Promise<MlflowRunRef> {
  const keyTags = [
    { key: PARENT_RUN_TAG, value: input.parent.runId },
    { key: BASELINE_TAG, value: input.baseline },
  ];
  const runId = await findOrMakeRun(ep, input.parent.experimentId, keyTags, input.name, input.startTime);
  const ref = { uri: ep.uri, experimentId: input.parent.experimentId, runId };
  await logBatch(ep, ref, { params: input.params });
  return ref;
}

/** Logs `batch` in requests within MLflow's limits; `afterEach` after each request (heartbeats). */
export async function logBatch(ep: MlflowEndpoint, run: MlflowRunRef, batch: MlflowBatch, afterEach?: (done: number) => void): Promise<void> {
  let done = 0;
  for (const part of splitBatch(batch)) {
    await mlflowCall(ep, 'POST', 'runs/log-batch', { run_id: run.runId, ...part });
    afterEach?.(++done);
  }
}

/**
 * The points of `metrics` whose metric the run holds no point of at that step yet. MLflow keeps one
 * point per key, step, timestamp and value, so a step redone by a run resumed from its saved state
 * (a later time, other values) would add a second; left out here, the run keeps the first, as its
 * metrics file does. One request when every point is past its metric's latest step (a run's points
 * come in step order); a metric whose latest step is not behind the batch has its history read.
 */
export async function pointsNotLogged(ep: MlflowEndpoint, run: MlflowRunRef, metrics: MlflowMetric[]): Promise<MlflowMetric[]> {
  if (metrics.length === 0) return metrics;
  const got = await mlflowCall<{ run: { data: { metrics?: Array<{ key: string; step?: number | string }> } } }>(ep, 'GET', 'runs/get', { run_id: run.runId });
  const latestStep = new Map((got.run.data.metrics ?? []).map((m) => [m.key, Number(m.step ?? 0)]));
  const behind = new Set(metrics.filter((m) => m.step <= (latestStep.get(m.key) ?? -Infinity)).map((m) => m.key));
  const held = new Set<string>();
  for (const key of behind) for (const step of await loggedSteps(ep, run, key)) held.add(`${step} ${key}`);
  return metrics.filter((m) => !held.has(`${m.step} ${m.key}`));
}

/** The steps at which the run holds points of `key` (its whole history, page by page). */
async function loggedSteps(ep: MlflowEndpoint, run: MlflowRunRef, key: string): Promise<number[]> {
  const steps: number[] = [];
  let pageToken: string | undefined;
  do {
    const page = await mlflowCall<{ metrics?: Array<{ step?: number | string }>; next_page_token?: string }>(ep, 'GET', 'metrics/get-history', {
      run_id: run.runId,
      metric_key: key,
      max_results: 25_000,
      ...(pageToken ? { page_token: pageToken } : {}),
    });
    steps.push(...(page.metrics ?? []).map((m) => Number(m.step ?? 0)));
    pageToken = page.next_page_token || undefined;
  } while (pageToken);
  return steps;
}

export async function setStatus(ep: MlflowEndpoint, run: MlflowRunRef, status: MlflowRunStatus, endTime?: number): Promise<void> {
  await mlflowCall(ep, 'POST', 'runs/update', { run_id: run.runId, status, ...(endTime !== undefined ? { end_time: endTime } : {}) });
}

/** The run's page in the MLflow UI (served by `mlflow server` at the tracking URI). */
export function mlflowRunUrl(run: MlflowRunRef): string {
  return `${run.uri.replace(/\/+$/, '')}/#/experiments/${run.experimentId}/runs/${run.runId}`;
}
