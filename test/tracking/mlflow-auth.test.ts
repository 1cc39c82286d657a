/**
 * Credentials against a real authenticating MLflow server (`mlflow server --app-name basic-auth`,
 * user admin): the right password logs a run; a wrong password, a token this server does not take
 * and no credentials are refused at the start naming tracking.mlflow.uri and what was sent, and a
 * trainingRun whose orchestration worker holds them fails with a ConfigError before anything is
 * logged (no MLflow run, no logging activity, no training).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { mlflowCall, type MlflowEndpoint } from '../../src/tracking/mlflow-client';
import { ensureExperiment, findRun, logBatch, openRun, setStatus } from '../../src/tracking/mlflow-run';
import { scheduledActivityTypes } from '../helpers/history';
import { trackedTestEnv } from '../helpers/mlflow';
import { tinyRlConfig } from '../helpers/temporal';

const PASSWORD = 'right-password-7';
// Only the orchestration worker (a process, given the credentials): a refused run trains nothing.
const suite = trackedTestEnv('mlflow-auth', { queues: [], mlflow: { basicAuth: { adminPassword: PASSWORD } } });

const admin = (): MlflowEndpoint => ({ uri: suite.mlflow.uri, username: 'admin', password: PASSWORD });
// A bearer token, a wrong password, nothing: each set explicitly, so the test's own environment does not count.
const refused: Array<[string, Partial<MlflowEndpoint>, RegExp]> = [
  ['a wrong password', { username: 'admin', password: 'wrong', token: '' }, /sent: user 'admin' and a password \(MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD\)/],
  ['a token', { username: '', password: '', token: 'not-a-token-here' }, /sent: a token \(MLFLOW_TRACKING_TOKEN\)/],
  ['no credentials', { username: '', password: '', token: '' }, /sent: no credentials/],
];

it('logs a run with the right password (basic auth, as MLflow\'s client sends it)', async () => {
  const exp = await ensureExperiment(admin(), 'auth-ok');
  if (!('experimentId' in exp)) throw new Error(exp.problem.message);
  const run = await openRun(admin(), { experimentId: exp.experimentId, workflowId: 'auth-ok-1', startTime: 1_000, params: [{ key: 'seed', value: '7' }], tags: [] });
  await logBatch(admin(), run, { metrics: [{ key: 'sft/loss', value: 1.5, step: 1, timestamp: 2_000 }] });
  await setStatus(admin(), run, 'FINISHED', 3_000);
  const got = await mlflowCall<{ run: { info: { status: string }; data: { metrics?: Array<{ key: string; value: number; step: number }> } } }>(admin(), 'GET', 'runs/get', { run_id: run.runId });
  expect(got.run.info.status).toBe('FINISHED');
  expect(got.run.data.metrics).toEqual([{ key: 'sft/loss', value: 1.5, step: 1, timestamp: 2_000 }]);
});

it.each(refused)('refuses %s at the start, naming tracking.mlflow.uri and the credentials sent', async (_what, creds, sent) => {
  const got = await ensureExperiment({ uri: suite.mlflow.uri, ...creds }, 'auth-refused');
  expect(got).toEqual({ problem: { path: 'tracking.mlflow.uri', message: expect.stringMatching(/answered 401/) as string } });
  const { message } = (got as { problem: { message: string } }).problem;
  expect(message).toMatch(sent);
  expect(message).toMatch(/set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or MLFLOW_TRACKING_TOKEN/);
});

it.each([
  ['a wrong password', { MLFLOW_TRACKING_USERNAME: 'admin', MLFLOW_TRACKING_PASSWORD: 'wrong' }],
  ['a token the server does not take', { MLFLOW_TRACKING_TOKEN: 'not-a-token-here' }],
])('fails a run whose worker holds %s with a ConfigError naming tracking.mlflow.uri, before anything is logged', async (_what, env) => {
  await suite.workers.killAll();
  suite.workers.spawnWorker('orchestration', { MLFLOW_TRACKING_USERNAME: '', MLFLOW_TRACKING_PASSWORD: '', MLFLOW_TRACKING_TOKEN: '', ...env });
  const experiment = `auth-run-${Object.keys(env).length}`;
  const { workflowId, handle } = await suite.ctx.startTrainingRun('mlflow-auth', { ...tinyRlConfig(), tracking: { mlflow: { uri: suite.mlflow.uri, experiment } } });
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause as Error & { type?: string };
  expect(cause.type).toBe('ConfigError');
  expect(cause.message).toMatch(/tracking\.mlflow\.uri: MLflow at http:\/\/127\.0\.0\.1:\d+ answered 401/);
  const scheduled = scheduledActivityTypes(await handle.fetchHistory());
  expect(scheduled).toContain('openTrackingRun');
  expect(scheduled).not.toContain('logTracking');
  expect(scheduled).not.toContain('initPolicy');
  // Nothing in MLflow: the experiment was not made (so no run), as the admin sees it.
  const exp = await mlflowCall(admin(), 'GET', 'experiments/get-by-name', { experiment_name: experiment }).catch((e: Error) => e);
  expect(String(exp)).toMatch(/RESOURCE_DOES_NOT_EXIST/);
  expect(await findRun(admin(), '0', workflowId)).toBeUndefined();
}, 120_000);
