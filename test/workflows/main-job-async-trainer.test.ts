/**
 * The main job with asynchronous RL hosts the training queue in a process of its own (tfjs's
 * synchronous training would otherwise hold the rollouts' event loop). That process must not cost
 * durability: if it dies the main job says so and stops, leaving the run on the server for
 * --resume; if the main job dies the trainer goes with it rather than serving on as an orphan; and a
 * resumed run finishes with every RL step trained once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { createTestNamespace, tempStore, testAddress, tinyRlConfig, uniqueId } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { scheduledInputs } from '../helpers/history';
import { killMainProcesses, startMain } from '../helpers/main-job';

let namespace: string;
let connection: Connection;
let client: Client;

beforeAll(async () => {
  namespace = await createTestNamespace('main-async');
  connection = await Connection.connect({ address: testAddress() });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  killMainProcesses();
  await connection?.close();
});

/** Running, not gone and not a zombie (an orphan whose exit nobody has reaped yet has ended). */
const alive = (pid: number): boolean => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(') ') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};
/** The niceness of every thread of a process (Linux keeps it per thread). */
const threadNiceness = (pid: number): number[] =>
  fs.readdirSync(`/proc/${pid}/task`).flatMap((tid) => {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // Field 19 (nice), counted after the command name's closing parenthesis (fields 3 on).
      return [Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16])];
    } catch {
      return [];
    }
  });
const TRAINER_LINE = /trainer: +a process of its own \(pid (\d+), log \.data\/logs\/trainer\.log\), for asynchronous RL/;

it('trains in a process of its own; a dead trainer stops the job for --resume, a dead job takes its trainer along, and the resumed run trains every step once', async () => {
  const store = tempStore('main-async');
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-async-runs-'));
  const configFile = path.join(runsDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify({ ...tinyRlConfig({ steps: 3, async: { maxStaleness: 1 } }), timeouts: { heartbeatSec: 3 } }));
  const env = { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: store.root, DURABLE_RL_RUNS: runsDir };
  const workflowId = uniqueId('main-async');
  const handle = client.workflow.getHandle(workflowId);
  const trainGrpoStarted = async () => {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    return pending.some((a) => a.activityType?.name === 'trainGrpo' && a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) ? true : undefined;
  };

  // 1. The trainer is SIGKILLed inside an update: the job stops, naming the way on.
  const first = startMain(['--config', configFile, '--workflow-id', workflowId], env);
  const trainer1 = Number(await waitFor('the trainer process', async () => TRAINER_LINE.exec(first.output())?.[1], 120_000));
  await waitFor('an update in flight', trainGrpoStarted, 180_000);
  // The rollouts yield the CPU to the update: every thread of the job at nice +10 (its workers' too,
  // started after), the trainer's at the niceness it started with. (The server is the tests' own.)
  expect(first.output()).toContain('rollouts:    this process at nice +10, so the update keeps its core');
  expect(new Set(threadNiceness(first.child.pid!))).toEqual(new Set([10]));
  expect(threadNiceness(first.child.pid!).length).toBeGreaterThan(4);
  expect(new Set(threadNiceness(trainer1))).toEqual(new Set([os.getPriority(process.pid)]));
  process.kill(trainer1, 'SIGKILL');
  const stopped = await first.exit;
  expect(stopped.code).toBe(1);
  expect(stopped.out).toContain(`run ${workflowId} stopped here: the worker process trainer.js (pid ${trainer1}) exited (SIGKILL)`);
  expect(stopped.out).toContain(`continue it with --resume ${workflowId}`);
  expect((await handle.describe()).status.name).toBe('RUNNING');

  // 2. Resumed, then the main job itself is SIGKILLed: its trainer shuts down by itself.
  const second = startMain(['--resume', workflowId], env);
  const trainer2 = Number(await waitFor('the second trainer process', async () => TRAINER_LINE.exec(second.output())?.[1], 120_000));
  expect(trainer2).not.toBe(trainer1);
  second.child.kill('SIGKILL');
  expect((await second.exit).code).toBeNull();
  await waitFor('the orphaned trainer gone', async () => (alive(trainer2) ? undefined : true), 30_000);

  // 3. Resumed again: the run finishes, every RL step trained once, and the trainer stops with the job.
  const third = await startMain(['--resume', workflowId], env).exit;
  expect(third.code).toBe(0);
  expect(third.out).toContain(`run ${workflowId} is still running on the server`);
  const line3 = TRAINER_LINE.exec(third.out);
  expect(line3).not.toBeNull();
  expect(alive(Number(line3![1]))).toBe(false);
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  const result = JSON.parse(fs.readFileSync(path.join(runsDir, `${workflowId}.result.json`), 'utf8')) as TrainingRunResult;
  expect(result.rlSteps).toBe(3);
  expect(result.rl.every((p) => p.schedule?.maxStaleness === 1)).toBe(true);
  const steps = scheduledInputs<{ step: number }>(await handle.fetchHistory(), 'trainGrpo').map((i) => i.step);
  expect(new Set(steps).size).toBe(steps.length);
  expect(steps.length).toBe(3);
}, 600_000);

it('keeps every queue in one process for a synchronous run', async () => {
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-sync-runs-'));
  const configFile = path.join(runsDir, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(tinyRlConfig({ steps: 1 })));
  const { code, out } = await startMain(['--config', configFile, '--workflow-id', uniqueId('main-sync')], { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: tempStore('main-sync').root, DURABLE_RL_RUNS: runsDir }).exit;
  expect(code).toBe(0);
  expect(out).not.toMatch(/^trainer:/m);
}, 300_000);
