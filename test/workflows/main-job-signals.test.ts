/**
 * A signal ends the main job cleanly (issue 36, item 4): SIGTERM, and Ctrl-C's SIGINT, mid-run stop
 * its workers (drained, not killed) and its progress, leave the run running on the server, print the
 * --resume command and exit non-zero (128 + the signal's number); `--resume` then finishes the run.
 * It used to go on forever: the SDK shut the workers down on the signal, and the job kept waiting
 * for a run no worker served.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { progressQuery } from '../../workflows/messages';
import { createTestNamespace, testAddress, tinyRunConfig, uniqueId } from '../helpers/temporal';
import { killMainProcesses, startMain, type MainExit } from '../helpers/main-job';
import { waitFor } from '../helpers/wait';

let namespace: string;
let connection: Connection;
let client: Client;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-signals-'));

beforeAll(async () => {
  namespace = await createTestNamespace('main-signals');
  connection = await Connection.connect({ address: testAddress() });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  killMainProcesses();
  await connection?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The job's exit, or a failure naming what it printed if it has not ended within `ms`. */
const exitWithin = async (main: ReturnType<typeof startMain>, ms: number): Promise<MainExit> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([main.exit, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the main job did not end within ${ms} ms; it printed:\n${main.output()}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
};

it('stops on SIGTERM and on SIGINT mid-run, leaving the run for --resume, which finishes it', async () => {
  const runsDir = path.join(tmp, 'runs');
  const configFile = path.join(tmp, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(tinyRunConfig({ sft: { steps: 24, batchSize: 4, stepsPerActivity: 1, warmupSteps: 1 } })));
  const env = { TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: path.join(tmp, 'store'), DURABLE_RL_RUNS: runsDir };
  const workflowId = uniqueId('main-signals');
  const handle = client.workflow.getHandle(workflowId);
  const atStep = (n: number) => waitFor(`SFT step ${n}`, async () => ((await handle.query(progressQuery)).step >= n ? true : undefined), 180_000);

  for (const [signal, code, args, step] of [
    ['SIGTERM', 143, ['--config', configFile, '--workflow-id', workflowId], 2],
    ['SIGINT', 130, ['--resume', workflowId], 8],
  ] as const) {
    const main = startMain([...args], env);
    await atStep(step);
    main.child.kill(signal);
    const stopped = await exitWithin(main, 60_000);
    expect(stopped.out).toContain(`run ${workflowId} stopped here: ${signal} received; this process's workers stop, and the run stays on the server: continue it with --resume ${workflowId}:\n  bash scripts/main.sh --resume ${workflowId}`);
    expect(stopped.code).toBe(code);
    expect((await handle.describe()).status.name).toBe('RUNNING');
  }

  const resumed = await exitWithin(startMain(['--resume', workflowId], env), 240_000);
  expect(resumed.out).toContain(`run ${workflowId} is still running on the server`);
  expect(resumed.code).toBe(0);
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  const result = JSON.parse(fs.readFileSync(path.join(runsDir, `${workflowId}.result.json`), 'utf8')) as TrainingRunResult;
  expect(result.sftSteps).toBe(24);
}, 600_000);
