/**
 * Horizon episodes on the real dev server: the scripted oracle writes shortest-path plans of H
 * moves (activities/oracle-inference.ts), the real grid environment runs the chunks on the tools
 * queue and the real samples activity writes one sample per executed chunk. Then trainingRun runs
 * the grid world end to end (SFT, per-H evaluation, an RL step with horizon rollouts) on a tiny
 * policy with the real activities.
 */
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { readSamples } from '../../src/contracts/sample-set';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import { parseMetricsJsonl } from '../../src/report';
import type { HorizonEpisodeDigest, HorizonRolloutInput } from '../../workflows/horizon-types';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { WeightsInfo } from '../../src/contracts/weights';
import fs from 'node:fs';
import { testEnv, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';

const ORACLE_WEIGHTS: WeightsInfo = { version: 4, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } };
const oracleQueue = uniqueId('oracle-grid');
let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('horizon-rollout');
  await ctx.addWorker({ taskQueue: oracleQueue, activities: createOracleInferenceActivities({ store: ctx.store }), maxConcurrentActivityTaskExecutions: 64 });
});

afterAll(async () => {
  await ctx?.stop();
});

const gridConfig = (over: Partial<RunConfigInput> = {}): RunConfigInput => ({
  seed: 5,
  task: { kind: 'grid', grid: { rows: 5, cols: 5, walls: 4, maxSteps: 16 } },
  horizon: { actionHorizonsPattern: [2, 3, 15], numActionChunks: 2, baseH: 5, usePlanReward: true, planRewardCoef: 0.1 },
  rl: { promptsPerStep: 2, groupSize: 3 },
  rollout: { kind: 'horizon' },
  timeouts: { heartbeatSec: 10 },
  ...over,
});

describe('horizonRollout', () => {
  it('plans H moves, runs them in chunks on the tools queue, replans at H, and writes a sample per executed chunk', async () => {
    const input: HorizonRolloutInput = { runId: 'horizon-test', rolloutId: 1, config: parseRunConfig(gridConfig()), policy: { weights: ORACLE_WEIGHTS, inferenceQueue: oracleQueue } };
    const handle = await ctx.env.client.workflow.start('horizonRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('horizon'), args: [input] });
    const result = (await handle.result()) as RolloutSummary;
    // The oracle reaches every goal: success 1, plus the plan reward 0.1 * H / 5.
    expect(result.episodes).toBe(6);
    expect(result.horizon!.map((h) => [h.horizon, h.success, h.total])).toEqual([
      [2, 2, 2],
      [3, 2, 2],
      [15, 2, 2],
    ]);
    expect(result.rows.map((r) => r.reward)).toEqual([1.04, 1.06, 1.3, 1.04, 1.06, 1.3].map((x) => expect.closeTo(x, 10)));
    // horizon.groupBy 'layout' (the default): a layout's episodes at every H are one group.
    expect(result.rows.map((r) => r.groupId)).toEqual(['r1-p0', 'r1-p0', 'r1-p0', 'r1-p1', 'r1-p1', 'r1-p1']);

    // Episode 0 (H = 2): the history reads plan, chunk, plan, chunk, ... (one 2-move chunk per plan).
    const episode = ctx.env.client.workflow.getHandle(`${handle.workflowId}/ep-0`);
    const digest = (await episode.result()) as HorizonEpisodeDigest;
    const history = await episode.fetchHistory();
    const activities = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType!.name!] : []));
    expect(activities).toEqual(digest.plans.flatMap(() => ['generate', 'gridChunk']));
    expect(digest.plans.length).toBe(Math.ceil(digest.steps / 2));
    expect(digest.plans.every((p) => p.text.length === 2)).toBe(true);
    // Each plan starts where the one before left the agent.
    digest.plans.slice(1).forEach((p, i) => expect(p.at).toEqual(digest.chunks.filter((c) => c.planIndex === i + 1).at(-1)!.to));

    // H = 15 with chunks of 2: one plan, several chunks at offsets 0, 2, 4, ...
    const long = (await ctx.env.client.workflow.getHandle(`${handle.workflowId}/ep-2`).result()) as HorizonEpisodeDigest;
    expect(long.plans).toHaveLength(1);
    expect(long.chunks.map((c) => c.chunkOffset)).toEqual(long.chunks.map((_, i) => 2 * i));

    const samples = await readSamples(ctx.store, result.samples.single!.ref);
    const chunks = (await Promise.all([0, 1, 2, 3, 4, 5].map((i) => ctx.env.client.workflow.getHandle(`${handle.workflowId}/ep-${i}`).result()))) as HorizonEpisodeDigest[];
    expect(samples).toHaveLength(chunks.reduce((n, e) => n + e.chunks.length, 0));
    for (const s of samples) {
      const trained = s.lossMask.flatMap((m, j) => (m === 1 ? [j] : []));
      // The chunk's slice of its plan, and nothing else.
      expect(trained[0]).toBe(s.metadata.chunkOffset);
      expect(trained.at(-1)! - trained[0]! + 1).toBe(trained.length);
      expect([2, 3, 15]).toContain(s.metadata.planHorizon);
      expect(s.metadata.weightVersion).toBe(4);
    }
  });
});

describe('horizonRollout with horizon.groupBy layout-horizon', () => {
  it('groups a layout\'s episodes by their horizon', async () => {
    const config = parseRunConfig(gridConfig({ rl: { promptsPerStep: 1, groupSize: 6 }, horizon: { actionHorizonsPattern: [2, 3, 15], numActionChunks: 2, groupBy: 'layout-horizon' } }));
    const input: HorizonRolloutInput = { runId: 'horizon-test-groups', rolloutId: 2, config, policy: { weights: ORACLE_WEIGHTS, inferenceQueue: oracleQueue } };
    const result = (await ctx.env.client.workflow.execute('horizonRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('horizon-groups'), args: [input] })) as RolloutSummary;
    expect(result.rows.map((r) => r.groupId)).toEqual(['r2-p0-h2', 'r2-p0-h3', 'r2-p0-h15', 'r2-p0-h2', 'r2-p0-h3', 'r2-p0-h15']);
    const samples = await readSamples(ctx.store, result.samples.single!.ref);
    for (const s of samples) expect(s.metadata.groupId).toBe(`r2-p0-h${s.metadata.planHorizon}`);
  });
});

describe('trainingRun on the grid world', () => {
  it('runs SFT on oracle plans, evaluates per H on held-out layouts and trains on horizon rollouts', async () => {
    const config = tinyRunConfig({
      ...gridConfig({ horizon: { actionHorizonsPattern: [3, 6], numActionChunks: 3 } }),
      experiment: 'test-grid',
      task: { kind: 'grid', grid: { rows: 4, cols: 4, walls: 2, maxSteps: 8, testLayouts: 4 }, trainProblems: 20, evalProblems: 3 },
      model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 64 },
      rl: { steps: 1, promptsPerStep: 2, groupSize: 2 },
      eval: { everySteps: 0, rlEverySteps: 0 },
      compare: { moreSft: true, rft: true, sftBudget: 'rl-trained-tokens' },
    });
    const { handle, workflowId } = await ctx.startTrainingRun('grid', config);
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rlSteps).toBe(1);
    // Every evaluation: 3 held-out layouts at each H.
    for (const e of result.rlEvals) {
      expect(e.greedy.total).toBe(6);
      expect(e.byHorizon!.map((h) => [h.horizon, h.total])).toEqual([
        [3, 3],
        [6, 3],
      ]);
    }
    expect(result.rl[0]!.horizon!.map((h) => h.total)).toEqual([2, 2]);
    // The comparison: every policy once on the 4 test layouts at each H, apart from validation's 3.
    const c = result.comparison!;
    expect(c).toMatchObject({ split: 'test', problems: 8 });
    for (const policy of [c.sftOnly, c.rl, c.moreSft!, c.rft!]) expect(policy.byHorizon!.map((h) => h.total)).toEqual([4, 4]);
    // More SFT trained exactly as many tokens as RL's update did (RL's two epochs over its batch count once): the step that reached them trained only what was left.
    const metricsOf = parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8'), result.metricsFile!);
    expect(c.rl.trainedTokens).toBe(metricsOf.rl[0]!.tokensTrained);
    expect(c.rl.trainedTokens).toBeGreaterThan(0);
    expect(c.moreSft!.trainedTokens).toBe(c.rl.trainedTokens!);
    expect(c.moreSft!.steps).toBeGreaterThanOrEqual(1);
    expect(c.rft!.steps).toBe(1);
    const file = result.metricsFile!;
    const metrics = parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file);
    expect(Object.keys(metrics.rl[0]!.horizon!)).toEqual(['plan_h3_success_count', 'plan_h3_total_count', 'plan_h3_success_rate', 'plan_h6_success_count', 'plan_h6_total_count', 'plan_h6_success_rate']);
    expect(metrics.evals.find((e) => e.phase === 'rl')!.byHorizon).toEqual({ 3: expect.any(Number), 6: expect.any(Number) });
    expect(workflowId).toContain('grid');
  });
});
