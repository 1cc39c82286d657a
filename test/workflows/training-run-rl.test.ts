/** trainingRun's GRPO phase end to end on the real dev server with the real activities. */
import { names } from '../../activities/names';
import type { TrainGrpoOutput } from '../../activities/training';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { getJson } from '../../src/store/blob-store';
import { progressQuery } from '../../workflows/shared';
import type { RolloutSummary } from '../../workflows/plan-act-types';
import type { TrainingRunResult } from '../../workflows/training-run-types';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('training-run-rl');
});

afterAll(async () => {
  await ctx?.stop();
});

describe('trainingRun with an RL phase', () => {
  it('runs SFT, then per RL step a shared Plan/Act rollout child and one GRPO update', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun(
      'rl',
      tinyRunConfig({
        eval: { everySteps: 0, maxNewTokens: 8 },
        rollout: { kind: 'plan-act', maxTurns: 2 },
        rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 },
      }),
    );
    const result = (await handle.result()) as TrainingRunResult;

    expect(result.sftSteps).toBe(4);
    expect(result.rlSteps).toBe(2);
    expect(result.rl.map((p) => p.step)).toEqual([1, 2]);
    // The end-of-SFT eval's weights (v0) serve rollout 1; rollout 2 gets v1; the final eval v2.
    expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 1]);
    expect(result.evals.map((e) => [e.step, e.weightVersion])).toEqual([[4, 0], [6, 2]]);
    expect(result.final?.step).toBe(6);
    expect(result.weights?.version).toBe(2);
    for (const p of result.rl) {
      expect(p.meanReward).toBeGreaterThanOrEqual(0);
      expect(p.meanReward).toBeLessThanOrEqual(1);
      expect(Number.isFinite(p.loss)).toBe(true);
      expect(p.rows + p.skipped).toBeGreaterThan(0);
    }

    // One checkpoint per SFT chunk and per RL step, and one named result per RL step.
    const ckptNames = await ctx.store.listNames(names.checkpointPrefix(workflowId));
    expect(ckptNames).toEqual([0, 2, 4, 5, 6].map((s) => names.checkpoint(workflowId, s)));
    expect(decodeCheckpoint(await ctx.store.get((await ctx.store.getName(names.checkpoint(workflowId, 6)))!)).step).toBe(6);
    for (const [i, step] of [5, 6].entries()) {
      const out = await getJson<TrainGrpoOutput>(ctx.store, (await ctx.store.getName(names.rlStep(workflowId, step)))!);
      expect(out.checkpoint.name).toBe(names.checkpoint(workflowId, step));
      expect(out.rows).toBe(result.rl[i]!.rows);
    }

    // Each RL step ran its rollout as a child workflow with the run's episodes.
    for (const step of [1, 2]) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${step}`).result()) as RolloutSummary;
      expect(summary.episodes).toBe(4);
      expect(summary.mode).toBe('shared');
      expect(summary.meanReward).toBe(result.rl[step - 1]!.meanReward);
    }

    expect(await handle.query(progressQuery)).toEqual(expect.objectContaining({ phase: 'done', step: 6, totalSteps: 6, rlStep: 2 }));
  });
});
