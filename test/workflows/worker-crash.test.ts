/**
 * SIGKILL the training worker mid-chunk and the inference worker mid-evaluation, start them again,
 * and the run completes with exactly one checkpoint per chunk: none lost, none written twice.
 * The killed workers are separate processes running the built entry points (dist/workers/*.js).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { REPO_ROOT } from '../../src/paths';
import { names } from '../../activities/names';
import { progressQuery } from '../../workflows/shared';
import type { RunProgress, TrainingRunResult } from '../../workflows/training-run-types';
import { testAddress, testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;
const children = new Set<ChildProcess>();

function spawnWorker(entry: 'trainer' | 'inference'): ChildProcess {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', `${entry}.js`)], {
    env: { ...process.env, TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: ctx.namespace, DURABLE_RL_STORE: ctx.store.root },
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
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * Waits until an activity of this type has started on a worker (and, for trainSft, has heartbeated
 * a step that passes `atStep`), optionally once the run's progress passes `when`.
 */
async function waitForRunning(
  handle: WorkflowHandle,
  activityType: string,
  atStep: (heartbeatStep: number) => boolean,
  when: (p: RunProgress) => boolean = () => true,
): Promise<void> {
  await waitFor(`${activityType} running`, async () => {
    const progress = await handle.query(progressQuery).catch(() => undefined);
    if (!progress || !when(progress)) return false;
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    return pending.some((a) => {
      if (a.activityType?.name !== activityType || a.state !== temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) return false;
      const details = a.heartbeatDetails?.payloads?.[0]?.data;
      const step = details ? (JSON.parse(new TextDecoder().decode(details)) as { step?: number }).step : undefined;
      return activityType !== 'trainSft' || (step !== undefined && atStep(step));
    });
  });
}

/** Every blob that is a checkpoint, by its magic header. */
async function checkpointBlobSteps(): Promise<number[]> {
  const steps: number[] = [];
  const dir = path.join(ctx.store.root, 'blobs');
  for (const sub of await fs.readdir(dir)) {
    for (const file of await fs.readdir(path.join(dir, sub))) {
      const bytes = await fs.readFile(path.join(dir, sub, file));
      if (bytes.subarray(0, 8).toString('latin1') === 'DRLCKPT1') steps.push(decodeCheckpoint(new Uint8Array(bytes)).step);
    }
  }
  return steps.sort((a, b) => a - b);
}

beforeAll(async () => {
  // Orchestration and tools stay in this process; the workers we kill are real OS processes.
  ctx = await testEnv('crash', ['orchestration', 'tools']);
});

afterAll(async () => {
  for (const child of children) await killHard(child);
  await ctx?.stop();
});

it('survives SIGKILL of the training and inference workers without losing or duplicating checkpoints', async () => {
  let trainer = spawnWorker('trainer');
  let inference = spawnWorker('inference');
  const { workflowId, handle } = await ctx.startTrainingRun(
    'crash',
    tinyRunConfig({
      model: { dModel: 64, nLayers: 2, nHeads: 2, dFf: 128, maxSeq: 192 },
      sft: { steps: 24, batchSize: 32, stepsPerActivity: 8, warmupSteps: 1 },
      // An evaluation long enough (seconds) to kill the inference worker in the middle of it.
      eval: { everySteps: 8, maxNewTokens: 48 },
      task: { trainProblems: 60, evalProblems: 96 },
      timeouts: { heartbeatSec: 3 },
    }),
  );

  // Kill each worker while one of its activities is running on it, so that activity must be retried.
  await waitForRunning(handle, 'trainSft', (step) => step >= 10);
  await killHard(trainer);
  trainer = spawnWorker('trainer');

  await waitForRunning(handle, 'evaluatePolicy', () => true, (p) => p.step >= 16);
  await killHard(inference);
  inference = spawnWorker('inference');

  const result = (await handle.result()) as TrainingRunResult;
  expect(result.sftSteps).toBe(24);
  expect(result.losses.map((l) => l.step)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  expect((await ctx.store.listNames(names.checkpointPrefix(workflowId))).length).toBe(4);
  // One checkpoint blob per chunk boundary: a retried chunk did not write a second one.
  expect(await checkpointBlobSteps()).toEqual([0, 8, 16, 24]);

  const events = (await handle.fetchHistory()).events ?? [];
  const retried = events.filter((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
  expect(retried.length).toBeGreaterThanOrEqual(2);
}, 240_000);
