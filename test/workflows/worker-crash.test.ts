/**
 * SIGKILL the training worker mid-chunk and the inference worker mid-evaluation, start them again,
 * and the run completes with exactly one checkpoint per chunk: none lost, none written twice.
 * The killed workers are separate processes running the production worker code; each is killed at
 * a point it is known to have reached (it freezes there, see test/fixtures/freezing-worker.ts).
 */
import { names } from '../../src/store/run-names';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';
import { checkpointBlobSteps } from '../helpers/store';
import { WORKER_DIED } from '../../workers/attempt-journal';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;


beforeAll(async () => {
  // Orchestration and tools stay in this process; the workers we kill are real OS processes.
  ctx = await testEnv('crash', ['orchestration', 'tools']);
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
});

/** SFT only, in chunks of 8 steps, big enough that a chunk outlasts the moment a kill lands. */
function crashRunConfig(o: { steps: number; evalEvery: number; evalProblems: number; heartbeatSec: number }) {
  return tinyRunConfig({
    model: { dModel: 64, nLayers: 2, nHeads: 2, dFf: 128, maxSeq: 192 },
    sft: { steps: o.steps, batchSize: 32, stepsPerActivity: 8, warmupSteps: 1 },
    eval: { everySteps: o.evalEvery, maxNewTokens: 48 },
    task: { trainProblems: 60, evalProblems: o.evalProblems },
    rl: { steps: 0 },
    timeouts: { heartbeatSec: o.heartbeatSec },
  });
}

it('survives SIGKILL of the training and inference workers without losing or duplicating checkpoints', async () => {
  // Each worker freezes inside an activity: the trainer in the middle of the 8-to-16 SFT chunk, the
  // inference worker as its second evaluation starts (an evaluation can finish within a second, before
  // any progress heartbeat, so freezing on one would be a race); each is then SIGKILLed.
  const trainer = workers.spawnFreezingWorker('trainer', 'trainSft:step:12');
  const inference = workers.spawnFreezingWorker('inference', 'evaluatePolicy:start:2');
  const { workflowId, handle } = await ctx.startTrainingRun(
    'crash',
    crashRunConfig({ steps: 24, evalEvery: 8, evalProblems: 96, heartbeatSec: 3 }),
  );
  const frozen = await Promise.all([workers.killWhenFrozen('trainer', trainer), workers.killWhenFrozen('inference', inference)]);
  expect(frozen[0]).toMatch(/^FROZEN trainSft \{"step":12,/);
  expect(frozen[1]).toBe('FROZEN evaluatePolicy {"start":2}');

  const result = (await handle.result()) as TrainingRunResult;
  expect(result.sftSteps).toBe(24);
  expect(result.losses.map((l) => l.step)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
  expect((await ctx.store.listNames(names.checkpointPrefix(workflowId))).length).toBe(4);
  // One checkpoint blob per chunk boundary: the killed chunk wrote none, its retry wrote one.
  expect(await checkpointBlobSteps(ctx.store)).toEqual([0, 8, 16, 24]);

  // Exactly the two interrupted activities ran a second attempt.
  const events = (await handle.fetchHistory()).events ?? [];
  const typeOf = new Map(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name]] : [])));
  const retried = events.flatMap((e) => {
    const a = e.activityTaskStartedEventAttributes;
    return a && (a.attempt ?? 1) > 1 ? [`${typeOf.get(String(a.scheduledEventId))} attempt ${a.attempt}`] : [];
  });
  expect(retried.sort()).toEqual(['evaluatePolicy attempt 2', 'trainSft attempt 2']);
}, 240_000);

it('retries the attempt of a SIGKILLed trainer as soon as a new worker starts, not after the heartbeat timeout', async () => {
  // A heartbeat timeout far beyond the test's patience: only the attempt journal
  // (workers/attempt-journal.ts) can get the killed chunk retried in time.
  const heartbeatSec = 300;
  // Only this test's workers: a healthy trainer left from the test above would take the chunk.
  await workers.killAll();
  workers.spawnWorker('inference');
  const trainer = workers.spawnFreezingWorker('trainer', 'trainSft:step:4');
  const { handle } = await ctx.startTrainingRun(
    'crash-journal',
    crashRunConfig({ steps: 8, evalEvery: 0, evalProblems: 32, heartbeatSec }),
  );
  expect(await workers.killWhenFrozen('trainer', trainer)).toMatch(/^FROZEN trainSft \{"step":4,/);
  const killedAt = Date.now();
  const result = (await handle.result()) as TrainingRunResult;
  expect(result.sftSteps).toBe(8);
  expect((Date.now() - killedAt) / 1000).toBeLessThan(heartbeatSec / 3);

  const events = (await handle.fetchHistory()).events ?? [];
  const retry = events.map((e) => e.activityTaskStartedEventAttributes).find((a) => (a?.attempt ?? 1) === 2);
  expect(retry?.lastFailure?.applicationFailureInfo?.type).toBe(WORKER_DIED);
  expect(retry?.lastFailure?.message).toMatch(/^worker process \d+ died during this attempt/);
}, 240_000);
