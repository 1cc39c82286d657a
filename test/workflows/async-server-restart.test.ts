/**
 * Asynchronous RL across a SIGKILL of the Temporal server: a dev server of this test's own (SQLite
 * file, so its histories outlive the process) is killed while step 2's rollout runs ahead of step 1's
 * update, and started again on the same port and file; the workers and the client reconnect by
 * themselves. The run finishes with every step trained exactly once on its own rollout, within the
 * staleness bound.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { freePort, startDevServer, type RunningServer } from '../../scripts/lib/dev-server';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { createWorkers } from '../../workers/create-workers';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { progressQuery } from '../../workflows/messages';
import { tinyRunConfig } from '../helpers/temporal';
import { tempStore } from '../helpers/store';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-async-restart-'));
const dbFile = path.join(tmp, 'temporal.db');
let port: number;
let server: RunningServer;
let native: NativeConnection;
let connection: Connection;
let workers: Worker[] = [];
let running: Array<Promise<void>> = [];

const start = (): Promise<RunningServer> => startDevServer({ port, dbFile, logFile: path.join(tmp, 'server.log'), detached: false });

beforeAll(async () => {
  port = await freePort();
  server = await start();
  native = await NativeConnection.connect({ address: server.address });
  connection = await Connection.connect({ address: server.address });
  workers = await createWorkers({ connection: native, queues: ['orchestration', 'inference', 'training', 'tools'], store: tempStore('async-restart'), runsDir: path.join(tmp, 'runs') });
  running = workers.map((w) => w.run());
}, 120_000);

afterAll(async () => {
  for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
  await Promise.allSettled(running);
  await native?.close();
  await connection?.close();
  await server?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

it('trains every step once, within the bound, when the server is SIGKILLed while a rollout runs ahead', async () => {
  const client = new Client({ connection });
  const workflowId = `async-restart-${Date.now()}`;
  const handle = await client.workflow.start('trainingRun', {
    taskQueue: TASK_QUEUES.orchestration,
    workflowId,
    args: [
      tinyRunConfig({
        task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 0 } },
        eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8 },
        rollout: { maxTurns: 2 },
        rl: { steps: 4, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16, ppoEpochs: 2, miniBatches: 2, async: { maxStaleness: 1 } },
        timeouts: { heartbeatSec: 10 },
      }),
    ],
  });
  // Kill once RL has begun: step 2's rollout is launched with step 1's, before step 1 trains.
  for (;;) {
    const p = await handle.query(progressQuery).catch(() => undefined);
    if (p?.phase === 'rl') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  process.kill(server.pid, 'SIGKILL');
  await server.stop();
  await new Promise((r) => setTimeout(r, 1_000));
  server = await start();

  const result = (await handle.result()) as TrainingRunResult;
  expect(result.rl.map((p) => p.step)).toEqual([1, 2, 3, 4]);
  for (const p of result.rl) {
    const summary = (await client.workflow.getHandle(`${workflowId}/rollout-${p.step}`).result()) as RolloutSummary;
    const samples = [summary.samples.planner, summary.samples.actor].reduce((n, s) => n + (s?.samples ?? 0), 0);
    expect(p.rows + p.skipped).toBe(samples);
    expect(p.schedule!.droppedStale).toBe(0);
    for (const staleness of Object.keys(p.schedule!.staleness)) expect(Number(staleness)).toBeLessThanOrEqual(1);
  }
  expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 0, 1, 2]);
}, 300_000);
