/**
 * SIGKILL the training worker mid-chunk and the inference worker mid-evaluation, start them again,
 * and the run completes with exactly one checkpoint per chunk: none lost, none written twice.
 * The killed workers are separate processes running the built entry points (dist/workers/*.js).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { REPO_ROOT } from '../../src/paths';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { names } from '../../activities/names';
import { progressQuery, TASK_QUEUES } from '../../workflows/shared';
import type { RunProgress, TrainingRunResult } from '../../workflows/training-run-types';
import { connectTestEnv, startWorkers, tempStore, testAddress, tinyRunConfig, uniqueId } from '../helpers/temporal';

let env: TestWorkflowEnvironment;
let store: FsBlobStore;
let local: Awaited<ReturnType<typeof startWorkers>>;
const children = new Set<ChildProcess>();

function spawnWorker(entry: 'trainer' | 'inference'): ChildProcess {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', `${entry}.js`)], {
    env: { ...process.env, TEMPORAL_ADDRESS: testAddress(), DURABLE_RL_STORE: store.root },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}

async function waitFor(what: string, poll: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await poll()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Every blob that is a checkpoint, by its magic header. */
async function checkpointBlobSteps(): Promise<number[]> {
  const steps: number[] = [];
  const dir = path.join(store.root, 'blobs');
  for (const sub of await fs.readdir(dir)) {
    for (const file of await fs.readdir(path.join(dir, sub))) {
      const bytes = await fs.readFile(path.join(dir, sub, file));
      if (bytes.subarray(0, 8).toString('latin1') === 'DRLCKPT1') steps.push(decodeCheckpoint(new Uint8Array(bytes)).step);
    }
  }
  return steps.sort((a, b) => a - b);
}

beforeAll(async () => {
  env = await connectTestEnv();
  store = tempStore('crash');
  // Orchestration and tools stay in this process; the workers we kill are real OS processes.
  local = await startWorkers(env, store, ['orchestration', 'tools']);
});

afterAll(async () => {
  for (const child of children) await killHard(child);
  await local?.stop();
  await env?.teardown();
});

it('survives SIGKILL of the training and inference workers without losing or duplicating checkpoints', async () => {
  let trainer = spawnWorker('trainer');
  let inference = spawnWorker('inference');
  const workflowId = uniqueId('crash');
  const handle = await env.client.workflow.start('trainingRun', {
    taskQueue: TASK_QUEUES.orchestration,
    workflowId,
    args: [
      tinyRunConfig({
        model: { dModel: 64, nLayers: 2, nHeads: 2, dFf: 128, maxSeq: 192 },
        sft: { steps: 24, batchSize: 32, stepsPerActivity: 8, warmupSteps: 1 },
        eval: { everySteps: 8, maxNewTokens: 16 },
        task: { trainProblems: 60, evalProblems: 16 },
        timeouts: { heartbeatSec: 3 },
      }),
    ],
  });
  const progress = (): Promise<RunProgress> => handle.query(progressQuery).catch(() => ({ phase: 'prepare', step: 0, totalSteps: 0, weightVersion: 0 }));

  // Mid-chunk: the first chunk is done and the second is under way on the trainer.
  await waitFor('the second SFT chunk', async () => {
    const p = await progress();
    if (process.env.DEBUG_CRASH) console.log(JSON.stringify(p));
    return p.phase === 'sft' && p.step >= 8;
  });
  await new Promise((r) => setTimeout(r, 300));
  await killHard(trainer);
  trainer = spawnWorker('trainer');

  await waitFor('an evaluation after the restart', async () => (await progress()).phase === 'eval');
  await killHard(inference);
  inference = spawnWorker('inference');

  const result = (await handle.result()) as TrainingRunResult;
  expect(result.sftSteps).toBe(24);
  expect(result.losses.map((l) => l.step)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  expect((await store.listNames(names.checkpointPrefix(workflowId))).length).toBe(4);
  // One checkpoint blob per chunk boundary: a retried chunk did not write a second one.
  expect(await checkpointBlobSteps()).toEqual([0, 8, 16, 24]);

  const events = (await handle.fetchHistory()).events ?? [];
  const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
  expect(retried.length).toBeGreaterThanOrEqual(2);
}, 240_000);
