/**
 * tracking.tensorboard: trainingRun writes its metrics-file lines as a TensorBoard event file, read
 * back here with TensorBoard's own reader (EventAccumulator): one point per tag and step, equal to
 * the metrics file, even when the orchestration worker is SIGKILLed right after a write and the write
 * is retried; a write killed between appending and saving what the file holds adds nothing twice; a
 * folder that cannot be written refuses the run at its start, naming tracking.tensorboard.dir.
 */
import fs from 'node:fs';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { metricsFilePath } from '../../activities/run-records';
import { createTensorboardActivities } from '../../activities/tensorboard';
import { TensorboardWriter } from '../../activities/tensorboard-writer';
import type { MetricsLine } from '../../src/report';
import { tensorboardRunDir } from '../../src/tracking/tensorboard';
import { expectedTensorboardPoints, readTensorboardPoints } from '../helpers/tensorboard';
import { activityStarts, scheduledActivityTypes } from '../helpers/history';
import { trackedTestEnv } from '../helpers/mlflow';
import { tinyRlConfig } from '../helpers/temporal';

const suite = trackedTestEnv('tensorboard', { queues: ['inference', 'training', 'tools'], mlflow: false });

const tracked = (tbDir: string) => ({ ...tinyRlConfig(), tracking: { tensorboard: { dir: tbDir } } });

function metricsLines(workflowId: string): MetricsLine[] {
  return fs.readFileSync(metricsFilePath(suite.ctx.runsDir, workflowId), 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as MetricsLine);
}

it('writes one point per tag and step, equal to the metrics file, when the worker is SIGKILLed right after a write and the write is retried', async () => {
  const frozen = suite.workers.spawnFreezingWorker('orchestration', 'writeTensorboard:written:1');
  const logDir = path.join(suite.dir, 'logs');
  const { workflowId, handle } = await suite.ctx.startTrainingRun('tb-run', tracked(logDir));
  expect(await suite.workers.killWhenFrozen('orchestration', frozen)).toMatch(/^FROZEN writeTensorboard \{"written":\d+,"skipped":0\}$/);
  await handle.result();
  const points = readTensorboardPoints(tensorboardRunDir(logDir, workflowId));
  expect(points).toEqual(expectedTensorboardPoints(metricsLines(workflowId)));
  const tagSteps = points.map((p) => p.split('=')[0]);
  expect(new Set(tagSteps).size).toBe(tagSteps.length);
  expect(tagSteps).toEqual(expect.arrayContaining(['sft/loss@1', 'sft/loss@4', 'rl/meanReward@1', 'rl/meanReward@2', 'eval/rl/greedyAccuracy@0', 'eval/rl/greedyAccuracy@2', 'baseline/SFT only/accuracy@0']));
  // The killed write was written again by a second attempt.
  const retried = activityStarts(await handle.fetchHistory()).flatMap((s) => (s.attempt > 1 ? [s.type] : []));
  expect(retried).toContain('writeTensorboard');
}, 300_000);

it('refuses a run whose folder cannot be written, naming tracking.tensorboard.dir, before anything is logged', async () => {
  await suite.workers.killAll();
  suite.workers.spawnWorker('orchestration');
  // A file where the log directory should be: nothing can be made under it.
  const notADir = path.join(suite.dir, 'a-file');
  fs.writeFileSync(notADir, '');
  const { handle } = await suite.ctx.startTrainingRun('tb-refused', tracked(notADir));
  const err = await handle.result().catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  expect((err as WorkflowFailedError).cause!.message).toMatch(/tracking\.tensorboard\.dir: cannot write TensorBoard's event file in .*a-file\/tb-refused-.*ENOTDIR/);
  const scheduled = scheduledActivityTypes(await handle.fetchHistory());
  expect(scheduled).not.toContain('writeTensorboard');
  expect(scheduled).not.toContain('trainSft');
}, 120_000);

it('writes what a cancelled run had logged: the queued lines go out as the run ends', async () => {
  const logDir = path.join(suite.dir, 'cancelled');
  const { workflowId, handle } = await suite.ctx.startTrainingRun('tb-cancel', tracked(logDir));
  // Cancelled once RL step 1 is in the metrics file: its lines wait for the flush (30 s) that never comes.
  const file = metricsFilePath(suite.ctx.runsDir, workflowId);
  for (let i = 0; i < 600 && !(fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes('"kind":"rl"')); i++) await new Promise((r) => setTimeout(r, 200));
  await handle.cancel();
  await expect(handle.result()).rejects.toThrow();
  const lines = metricsLines(workflowId);
  expect(lines.some((l) => l.kind === 'rl')).toBe(true);
  expect(readTensorboardPoints(tensorboardRunDir(logDir, workflowId))).toEqual(expectedTensorboardPoints(lines));
}, 120_000);

describe('the writer', () => {
  const writer = new TensorboardWriter();
  const { openTensorboard, writeTensorboard } = createTensorboardActivities({ writer });
  afterAll(() => writer.close());
  const rl = (step: number, meanReward: number) => ({ lines: [{ kind: 'rl', step, meanReward, loss: step / 10 }], timestamp: 1_700_000_000_000 + step * 1000 });

  it('adds nothing twice when a write is retried, or was killed after appending and before saving what the file holds', async () => {
    const { runDir } = await openTensorboard({ dir: path.join(suite.dir, 'unit'), workflowId: 'run/1', continued: false });
    expect(runDir).toBe(path.join(suite.dir, 'unit', 'run_1'));
    const write = (batches: ReturnType<typeof rl>[]) => new MockActivityEnvironment().run(writeTensorboard, { runDir, batches });
    expect(await write([rl(1, 0.5)])).toEqual({ written: 2, skipped: 0 });
    // A retry of the same write.
    expect(await write([rl(1, 0.5)])).toEqual({ written: 0, skipped: 2 });
    // Step 2 appended, then the writer "killed" before its state was saved: the state of before, and half a record more.
    const stateFile = path.join(runDir, '.durable-rl-tensorboard.json');
    const before = fs.readFileSync(stateFile);
    await write([rl(2, 0.25)]);
    fs.writeFileSync(stateFile, before);
    const eventFile = path.join(runDir, 'events.out.tfevents.durable-rl');
    fs.appendFileSync(eventFile, Buffer.alloc(4096, 7));
    // The retry, with what was logged meanwhile (a value that is not the first one logged for step 1 is not written).
    expect(await write([rl(1, 0.9), rl(2, 0.25), rl(3, 0.75)])).toEqual({ written: 4, skipped: 2 });
    // Nothing left of the killed write's records: the file ends where its counted records do.
    expect(fs.statSync(eventFile).size).toBe((JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { bytes: number }).bytes);
    expect(readTensorboardPoints(runDir)).toEqual(['rl/loss@1=0.10000000149011612', 'rl/loss@2=0.20000000298023224', 'rl/loss@3=0.30000001192092896', 'rl/meanReward@1=0.5', 'rl/meanReward@2=0.25', 'rl/meanReward@3=0.75']);
  });

  it('refuses a folder it cannot make, naming tracking.tensorboard.dir; a later execution retries instead', async () => {
    const file = path.join(suite.dir, 'plain-file');
    fs.writeFileSync(file, '');
    await expect(openTensorboard({ dir: file, workflowId: 'w', continued: false })).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true, message: expect.stringMatching(/^invalid config workflow input:\n {2}- tracking\.tensorboard\.dir: cannot write/) as unknown });
    await expect(openTensorboard({ dir: file, workflowId: 'w', continued: true })).rejects.toMatchObject({ type: 'TrackerUnavailable', nonRetryable: false });
  });
});
