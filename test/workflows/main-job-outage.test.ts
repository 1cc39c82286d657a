/**
 * The main job waits out a server outage (issue 36, item 4): its dev server (this test's own, a
 * SQLite file so the run outlives the process) is stopped for 60 s mid-run and started again on the
 * same port and file. The job says the server is unreachable, waits, says it is back, and the run
 * finishes, where it used to print `run … failed: Failed to get Workflow execution history` and exit
 * 1 with the run still running. Off a terminal its progress is plain lines, none repeated (the
 * progress bar wrote the same line every 10 s through the outage).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { freePort, startDevServer, type RunningServer } from '../../scripts/lib/dev-server';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { progressQuery } from '../../workflows/messages';
import { tinyRunConfig } from '../helpers/temporal';
import { killMainProcesses, startMain } from '../helpers/main-job';
import { waitFor } from '../helpers/wait';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-outage-'));
const dbFile = path.join(tmp, 'temporal.db');
let port: number;
let server: RunningServer | undefined;
const start = async (): Promise<RunningServer> => (server = await startDevServer({ port, dbFile, logFile: path.join(tmp, 'server.log'), detached: false }));

beforeAll(async () => {
  port = await freePort();
  await start();
}, 120_000);

afterAll(async () => {
  killMainProcesses();
  await server?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The progress lines of a main job's output (the bar's, or the plain ones). */
export const progressLines = (out: string): string[] => out.split(/\r|\n/).filter((l) => l.startsWith('trainingRun '));

it('waits out a 60 s outage of the server mid-run, saying so, and the run finishes', async () => {
  const runsDir = path.join(tmp, 'runs');
  const configFile = path.join(tmp, 'config.json');
  // SFT in chunks of one step, so the outage falls between activities of a run still going.
  fs.writeFileSync(configFile, JSON.stringify(tinyRunConfig({ sft: { steps: 12, batchSize: 4, stepsPerActivity: 1, warmupSteps: 1 } })));
  const workflowId = `main-outage-${Date.now()}`;
  const main = startMain(['--config', configFile, '--workflow-id', workflowId], { TEMPORAL_ADDRESS: server!.address, TEMPORAL_NAMESPACE: '', DURABLE_RL_STORE: path.join(tmp, 'store'), DURABLE_RL_RUNS: runsDir });
  const connection = await Connection.connect({ address: server!.address });
  const handle = new Client({ connection }).workflow.getHandle(workflowId);
  await waitFor('SFT under way', async () => ((await handle.query(progressQuery)).step >= 2 ? true : undefined), 180_000);
  await connection.close();

  await server!.stop();
  const stoppedAt = Date.now();
  await waitFor('the job to notice', async () => (main.output().includes('unreachable') ? true : undefined), 60_000);
  expect(main.output()).not.toContain('failed');
  await new Promise((r) => setTimeout(r, 60_000 - (Date.now() - stoppedAt)));
  await start();

  const { code, out } = await main.exit;
  expect(out).toContain(`Temporal server ${server!.address} unreachable`);
  expect(out).toMatch(new RegExp(`Temporal server ${server!.address} is back after \\d+ s`));
  expect(out).not.toContain(`run ${workflowId} failed`);
  expect(code).toBe(0);
  const result = JSON.parse(fs.readFileSync(path.join(runsDir, `${workflowId}.result.json`), 'utf8')) as TrainingRunResult;
  expect(result.sftSteps).toBe(12);
  // Off a terminal: plain lines, none the same as the one before.
  const lines = progressLines(out);
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.filter((l, i) => i > 0 && l === lines[i - 1])).toEqual([]);
  expect(lines.every((l) => !l.includes('░'))).toBe(true);
  expect(lines.at(-1)).toMatch(/^trainingRun 12\/12 steps/);
  // The SDK's retry warnings go to the worker log, not the terminal.
  expect(out).not.toContain('retried');
}, 420_000);
