/**
 * The main job's process dies (the machine stopped, the terminal was closed) while its run is in
 * flight. The server still holds the run as running; `main.js --resume <id>` starts workers again,
 * attaches to that same execution instead of starting another, and the run finishes: every RL step
 * trained once, the result written where a fresh run writes it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { names } from '../../src/store/run-names';
import { getJson } from '../../src/store/blob-store';
import type { RunState, TrainingRunResult } from '../../src/contracts/training-run';
import { createTestNamespace, tempStore, testAddress, tinyRlConfig, uniqueId } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { scheduledInputs } from '../helpers/history';
import { killMainProcesses, startMain } from '../helpers/main-job';

let namespace: string;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  namespace = await createTestNamespace('main-resume');
  connection = await Connection.connect({ address: testAddress() });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  killMainProcesses();
  await connection?.close();
});

it('continues a run whose main process was SIGKILLed, in the same execution, with every RL step trained once', async () => {
  const store = tempStore('main-resume');
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-resume-runs-'));
  const configFile = path.join(runsDir, 'config.json');
  // Heartbeats as short as the other kill tests': the killed process's update is retried within seconds.
  fs.writeFileSync(configFile, JSON.stringify({ ...tinyRlConfig({ steps: 4 }), timeouts: { heartbeatSec: 3 } }));
  const env = { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: store.root, DURABLE_RL_RUNS: runsDir };
  const workflowId = uniqueId('main-resume');
  const handle = client.workflow.getHandle(workflowId);

  const first = startMain(['--config', configFile, '--workflow-id', workflowId], env);
  await waitFor('RL step 1 saved', async () => {
    const ref = await store.getName(names.runState(workflowId));
    return ref && ((await getJson<RunState>(store, ref)).rl?.length ?? 0) >= 1 ? true : undefined;
  }, 180_000);
  // Killed inside a later step's update (a heartbeating activity), not between activities: what is
  // in flight is then an update that must be retried, not repeated.
  await waitFor('a later update in flight', async () => {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    return pending.some((a) => a.activityType?.name === 'trainGrpo' && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) ? true : undefined;
  }, 180_000);
  first.child.kill('SIGKILL');
  expect((await first.exit).code).toBeNull();
  const { runId } = await handle.describe();
  expect((await handle.describe()).status.name).toBe('RUNNING');

  const resumed = await startMain(['--resume', workflowId], env).exit;
  expect(resumed.out).toContain(`run ${workflowId} is still running on the server`);
  expect(resumed.out).not.toContain('$ temporal workflow start');
  expect(resumed.code).toBe(0);

  const described = await handle.describe();
  expect(described.runId).toBe(runId);
  expect(described.status.name).toBe('COMPLETED');
  const result = JSON.parse(fs.readFileSync(path.join(runsDir, `${workflowId}.result.json`), 'utf8')) as TrainingRunResult;
  expect(result.rlSteps).toBe(4);
  const steps = scheduledInputs<{ step: number }>(await handle.fetchHistory(), 'trainGrpo').map((i) => i.step);
  expect(new Set(steps).size).toBe(steps.length);
  expect(steps.length).toBe(4);
}, 420_000);

it('refuses --resume together with options that would choose another config', async () => {
  const { code, out } = await startMain(['--resume', 'any-run', '--seed', '3'], { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace }).exit;
  expect(code).toBe(2);
  expect(out).toContain('--resume any-run: the run goes on with the config it was started with; drop --seed');
}, 60_000);

it('refuses --resume of a run it has no input file for, naming the file', async () => {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-resume-none-'));
  const id = uniqueId('never-started');
  const { code, out } = await startMain(['--resume', id], { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_RUNS: runsDir }).exit;
  expect(code).toBe(2);
  expect(out).toContain(`--resume ${id}: no ${path.join(runsDir, `${id}.input.json`)}`);
}, 60_000);
