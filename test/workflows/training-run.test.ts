/** trainingRun end to end on the real dev server with the real activities. */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { RunConfig } from '../../src/config/schema';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { names } from '../../src/store/run-names';
import { EXPERIMENT } from '../../workflows/search-attributes';
import { progressQuery } from '../../workflows/messages';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { historyPayloads, longestNumberArray } from '../helpers/history';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('training-run');
});

afterAll(async () => {
  await ctx?.stop();
});

describe('trainingRun', () => {
  it('fits the policy in checkpointed chunks, publishes weights and evaluates held-out problems', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('sft', tinyRunConfig({ eval: { everySteps: 2, maxNewTokens: 8 } }));
    const result = (await handle.result()) as TrainingRunResult;

    expect(result.sftSteps).toBe(4);
    expect(result.losses.map((l) => l.step)).toEqual([1, 2, 3, 4]);
    expect(result.losses.every((l) => Number.isFinite(l.loss) && l.loss > 0)).toBe(true);
    // Baseline at step 0, one mid-run, the final one reused at step 4.
    expect(result.evals.map((e) => [e.step, e.weightVersion])).toEqual([[0, 0], [2, 1], [4, 2]]);
    expect(result.final?.problems).toBe(4);
    // Accuracies count whole problems; the random initial policy reproduces no plan and solves nothing.
    for (const e of result.evals) expect(Number.isInteger(Math.round(e.episodeAccuracy * e.problems * 1e6) / 1e6)).toBe(true);
    expect(result.evals[0]).toEqual(expect.objectContaining({ step: 0, plannerAccuracy: 0, episodeAccuracy: 0 }));
    expect(result.final?.examples.length).toBeGreaterThan(0);

    // One checkpoint per chunk boundary, each decodable, at the step its name says.
    const ckptNames = await ctx.store.listNames(names.checkpointPrefix(workflowId));
    expect(ckptNames).toEqual([0, 2, 4].map((s) => names.checkpoint(workflowId, s)));
    for (const [i, name] of ckptNames.entries()) {
      expect(decodeCheckpoint(await ctx.store.get((await ctx.store.getName(name))!)).step).toBe([0, 2, 4][i]);
    }

    expect(await handle.query(progressQuery)).toEqual(expect.objectContaining({ phase: 'done', step: 4, totalSteps: 4 }));
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(EXPERIMENT)).toBe('test-tiny');

    // What the Web UI shows stays small and readable: references and previews, not token arrays.
    const payloads = historyPayloads(await handle.fetchHistory());
    expect(payloads.length).toBeGreaterThan(10);
    for (const p of payloads) {
      expect(p.bytes).toBeLessThan(64 * 1024);
      expect(longestNumberArray(p.value)).toBeLessThanOrEqual(64);
    }
  });

  it('refuses a workflow id reused with another config before reading anything the first run stored', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('reuse', tinyRunConfig());
    await handle.result();
    const again = await ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [tinyRunConfig({ seed: 8 })] });
    const err = await again.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('ConfigError');
    expect(cause.message).toMatch(/used by a run with another config/);
    // It resolved its config and claimed the id, nothing more: no dataset, checkpoint or cached chunk was read.
    expect(await scheduledActivities(again)).toEqual(['resolveRunConfig', 'claimRunId']);
    // The same config under the same id is allowed (it reuses the finished chunks).
    const same = await ctx.env.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [tinyRunConfig()] });
    expect(((await same.result()) as TrainingRunResult).sftSteps).toBe(4);
  });

  it('records the complete config once, as the config activity\'s result (replays never re-apply defaults)', async () => {
    const { handle } = await ctx.startTrainingRun('resolved', tinyRunConfig());
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const completed = events.find((e) => e.activityTaskCompletedEventAttributes)?.activityTaskCompletedEventAttributes;
    const recorded = JSON.parse(new TextDecoder().decode(completed!.result!.payloads![0]!.data!)) as RunConfig;
    // Keys the input left out are in the recorded config with their defaults.
    expect(tinyRunConfig()).not.toHaveProperty('timeouts.toolSec');
    expect(tinyRunConfig()).not.toHaveProperty('rl.clipEps');
    expect(recorded.timeouts).toEqual({ generateSec: 600, trainSec: 3600, toolSec: 30, heartbeatSec: 10 });
    expect(recorded.rl.clipEps).toBe(0.2);
    expect((await scheduledActivities(handle))[0]).toBe('resolveRunConfig');
  });

  it('refuses dual mode (two planActJob workflows run it), naming rollout.mode', async () => {
    const { handle } = await ctx.startTrainingRun('dual', tinyRunConfig({ rollout: { mode: 'dual' } }));
    const cause = ((await handle.result().catch((e: unknown) => e)) as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('ConfigError');
    expect(cause.message).toMatch(/rollout\.mode: trainingRun trains one shared policy/);
    expect(await scheduledActivities(handle)).toEqual(['resolveRunConfig']);
  });

  it("refuses a planActJob's rollout timeouts, which trainingRun would ignore, naming them", async () => {
    const { handle } = await ctx.startTrainingRun('job-keys', tinyRunConfig({ rollout: { maxTurns: 2, rolloutTimeoutSec: 60 } }));
    const cause = ((await handle.result().catch((e: unknown) => e)) as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe('ConfigError');
    expect(cause.message).toMatch(/rollout\.rolloutTimeoutSec: it bounds a planActJob's rollouts/);
    expect(await scheduledActivities(handle)).toEqual(['resolveRunConfig']);
  });

  it('fails at once with a typed ConfigError naming the bad field', async () => {
    const { handle } = await ctx.startTrainingRun('bad-config', { sft: { steps: -3 } });
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('ConfigError');
    expect(cause?.message).toMatch(/sft\.steps/);
    expect((cause as ApplicationFailure).details).toEqual([[expect.objectContaining({ path: 'sft.steps' })]]);
    // The config activity failed once, without retries, and nothing else ran.
    expect(await scheduledActivities(handle)).toEqual(['resolveRunConfig']);
    const started = ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
    expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
  });
});

async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  return ((await handle.fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}
