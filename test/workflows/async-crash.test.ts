/**
 * Asynchronous RL (rl.async.maxStaleness 1) under SIGKILL: the training worker dies as the second GRPO
 * update starts (step 3's rollout is then in flight) and the inference worker in the middle of a
 * rollout; both come back. The run trains every step exactly once on its own rollout's samples —
 * none lost, none trained twice — never more than one weight version stale, with one checkpoint per
 * step. The killed workers are real OS processes running the production worker code, frozen at a
 * known point first (test/fixtures/freezing-worker.ts).
 */
import { names } from '../../src/store/run-names';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';
import { checkpointBlobSteps } from '../helpers/store';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  ctx = await testEnv('async-crash', ['orchestration', 'tools']);
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
});


it('loses and duplicates nothing, and stays within its staleness bound, when the trainer and an inference worker are SIGKILLed', async () => {
  const trainer = workers.spawnFreezingWorker('trainer', 'trainGrpo:start:2');
  // Rollouts 1 and 2 start together, each a generateBatch per GRPO group (2): the 3rd is rollout 2's.
  const inference = workers.spawnFreezingWorker('inference', 'generateBatch:start:3');
  const config = tinyRunConfig({
    task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 0 } },
    eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8 },
    rollout: { maxTurns: 2 },
    rl: { steps: 4, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16, ppoEpochs: 2, miniBatches: 2, async: { maxStaleness: 1 } },
    timeouts: { heartbeatSec: 3 },
  });
  const { workflowId, handle } = await ctx.startTrainingRun('async-crash', config);
  const frozen = await Promise.all([workers.killWhenFrozen('trainer', trainer), workers.killWhenFrozen('inference', inference)]);
  expect(frozen).toEqual(['FROZEN trainGrpo {"start":2}', 'FROZEN generateBatch {"start":3}']);

  const result = (await handle.result()) as TrainingRunResult;
  expect(result.rl.map((p) => p.step)).toEqual([1, 2, 3, 4]);
  for (const p of result.rl) {
    const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${p.step}`).result()) as RolloutSummary;
    const samples = [summary.samples.planner, summary.samples.actor].reduce((n, s) => n + (s?.samples ?? 0), 0);
    // Each step trained its own rollout's samples, all of them, once.
    expect(p.rows + p.skipped).toBe(samples);
    expect(p.schedule!.droppedStale).toBe(0);
    for (const staleness of Object.keys(p.schedule!.staleness)) expect(Number(staleness)).toBeLessThanOrEqual(1);
  }
  // One checkpoint per SFT chunk and RL step: the killed update wrote none, its retry one.
  const sft = [0, 2, 4];
  expect(await checkpointBlobSteps(ctx.store)).toEqual([...sft, 5, 6, 7, 8]);
  expect((await ctx.store.listNames(names.checkpointPrefix(workflowId))).length).toBe(sft.length + 4);

  // The two interrupted activities ran a second attempt; nothing else was retried.
  const events = (await handle.fetchHistory()).events ?? [];
  const typeOf = new Map(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e.activityTaskScheduledEventAttributes.activityType?.name]] : [])));
  const retried = events.flatMap((e) => {
    const a = e.activityTaskStartedEventAttributes;
    return a && (a.attempt ?? 1) > 1 ? [`${typeOf.get(String(a.scheduledEventId))}`] : [];
  });
  expect(retried).toEqual(['trainGrpo']);
}, 300_000);
