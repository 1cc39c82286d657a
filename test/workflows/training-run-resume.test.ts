/**
 * A run terminated in the middle of RL (`temporal workflow terminate`) starts again under the same
 * workflow id with { fromSavedState: true } (what `bash scripts/main.sh --resume <id>` sends) and
 * continues at the next RL step: nothing saved is trained again, nothing is lost, the metrics go on.
 */
import fs from 'node:fs';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { names } from '../../src/store/run-names';
import { parseMetricsJsonl } from '../../src/report';
import { getJson } from '../../src/store/blob-store';
import { progressQuery } from '../../workflows/messages';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { RunState, TrainingRunResult } from '../../src/contracts/training-run';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { scheduledInputs } from '../helpers/history';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('training-run-resume');
});

afterAll(async () => {
  await ctx?.stop();
});

const config = tinyRunConfig({
  task: { trainProblems: 40, evalProblems: 4, rl: { evalProblems: 4, testProblems: 0 } },
  eval: { everySteps: 0, rlEverySteps: 2, maxNewTokens: 8 },
  rollout: { maxTurns: 2 },
  rl: { steps: 4, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 },
});

/** Global steps of the trainGrpo activities a history scheduled. */
const trainGrpoSteps = (history: temporal.api.history.v1.IHistory): number[] => scheduledInputs<{ step: number }>(history, 'trainGrpo').map((i) => i.step);

describe('resuming a terminated trainingRun', () => {
  it('continues at the next RL step from the saved state; no step is repeated or lost', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('resume', config);
    // Terminate once RL step 2 is saved (the state name moves after every step's save).
    const saved = await waitFor('RL step 2 saved', async () => {
      const ref = await ctx.store.getName(names.runState(workflowId));
      if (!ref) return undefined;
      const s = await getJson<RunState>(ctx.store, ref);
      return (s.rl?.length ?? 0) >= 2 ? s : undefined;
    }, 60_000);
    await handle.terminate('test: stop mid-RL');
    const first = await handle.fetchHistory();
    // What the saved state said when we terminated (the run may have gone one step further since).
    const savedNow = await getJson<RunState>(ctx.store, (await ctx.store.getName(names.runState(workflowId)))!);
    const savedSteps = savedNow.rl!.length;
    expect(savedSteps).toBeGreaterThanOrEqual(saved.rl!.length);
    expect(savedSteps).toBeLessThan(4);

    const resumed = await ctx.env.client.workflow.start('trainingRun', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId,
      args: [config, { fromSavedState: true }],
    });
    const result = (await resumed.result()) as TrainingRunResult;

    expect(result.rl.map((p) => p.step)).toEqual([1, 2, 3, 4]);
    expect(result.sftSteps).toBe(4);
    // The resumed execution trains exactly the steps the saved state did not have.
    const sftSteps = 4;
    const again = trainGrpoSteps(await resumed.fetchHistory());
    expect(again).toEqual(Array.from({ length: 4 - savedSteps }, (_, i) => sftSteps + savedSteps + 1 + i));
    // No SFT chunk, initialisation or dataset is redone.
    const types = ((await resumed.fetchHistory()).events ?? []).map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name).filter(Boolean);
    expect(types).not.toContain('trainSft');
    expect(types).not.toContain('initPolicy');
    expect(types).not.toContain('prepareSftDataset');
    // Together the two executions trained each RL step; none was lost.
    expect([...new Set([...trainGrpoSteps(first), ...again])].sort()).toEqual([5, 6, 7, 8]);

    // The curves continue: one line per RL step, evaluations at 0, 2 and 4.
    const metrics = parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8'));
    expect(metrics.rl.map((p) => p.step)).toEqual([1, 2, 3, 4]);
    expect(metrics.evals.filter((e) => e.phase === 'rl').map((e) => e.step)).toEqual([0, 2, 4]);
    expect(fs.readFileSync(result.metricsFile!, 'utf8').split('\n').filter((l) => l.includes('"kind":"rl"'))).toHaveLength(4);
    expect(await resumed.query(progressQuery)).toEqual(expect.objectContaining({ phase: 'done', rlStep: 4 }));
  });

  it('refuses to resume with another config, naming the problem', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('resume-other', { ...config, rl: { ...config.rl, steps: 1 } });
    await handle.result();
    const resumed = await ctx.env.client.workflow.start('trainingRun', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId,
      args: [config, { fromSavedState: true }],
    });
    const err = await resumed.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause?.message).toMatch(/another config/);
  });
});
