/** trainingRun's RL phase end to end on the real dev server with the real activities. */
import type { WorkflowHandle } from '@temporalio/client';
import fs from 'node:fs';
import { names } from '../../src/store/run-names';
import type { TrainGrpoOutput } from '../../activities/training';
import { parseRunConfig } from '../../src/config/parse';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { parseMetricsJsonl } from '../../src/report';
import { groupsWithSpread } from '../../src/rl/dynamic-sampling';
import { getJson } from '../../src/store/blob-store';
import { progressQuery } from '../../workflows/messages';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { testEnv, tinyRlConfig, tinyRunConfig, type TestEnv } from '../helpers/temporal';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('training-run-rl');
});

afterAll(async () => {
  await ctx?.stop();
});

/** The activity types of a history's local-activity markers (each marker's data names its activity). */
function localActivityTypes(events: Array<{ markerRecordedEventAttributes?: { markerName?: string | null; details?: Record<string, { payloads?: Array<{ data?: Uint8Array | null }> | null }> | null } | null }>): string[] {
  return events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    const data = m?.markerName === 'core_local_activity' ? m.details?.['data']?.payloads?.[0]?.data : undefined;
    return data ? [String(JSON.parse(Buffer.from(data).toString('utf8')).activity_type)] : [];
  });
}

describe('trainingRun with an RL phase', () => {
  it('runs rollout.kind standard through the rollout table: single-agent episodes, trained like any other kind', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('standard', { ...tinyRlConfig(), rollout: { kind: 'standard', maxTurns: 2 } });
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rl.map((p) => [p.step, p.weightVersion])).toEqual([[1, 0], [2, 1]]);
    for (const step of [1, 2]) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/standard-rollout-${step}`).result()) as RolloutSummary;
      expect(summary).toMatchObject({ mode: 'single', episodes: 4 });
      expect(summary.samples.single?.samples).toBeGreaterThan(0);
      expect(summary.samples.planner).toBeUndefined();
      expect(result.rl[step - 1]!.meanReward).toBe(summary.meanReward);
    }
    // Two GRPO updates, each from the step's own single-agent samples.
    expect(result.checkpoint?.step).toBe(6);
  });

  it("with rollout.batchRequests 'local', plays Plan/Act episodes' generate and calculator calls in the orchestration worker (this process's engine and calculator) through exchange local activities, trained as usual", async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('local-calls', { ...tinyRlConfig({ steps: 1 }), rollout: { maxTurns: 2, batchRequests: 'local' } });
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rl.map((p) => p.step)).toEqual([1]);
    const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-1`).result()) as RolloutSummary;
    expect(summary).toMatchObject({ episodes: 4 });
    expect(summary.metrics.generations).toBeGreaterThanOrEqual(4);
    // One child workflow holds the rollout's 4 episodes (up to 256 by default with 'local', not one per
    // group): its calls in exchanges (a marker each, several replies to one), none an activity; its
    // samples written by an activity.
    const children = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-1`).fetchHistory()).events?.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes) ?? [];
    expect(children.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId)).toEqual([`${workflowId}/rollout-1/episodes-0`]);
    const events = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-1/episodes-0`).fetchHistory()).events ?? [];
    const activities = events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(activities).toEqual(['writeEpisodeSamples']);
    expect(localActivityTypes(events)).toContain('exchangeCalls');
    expect(new Set(localActivityTypes(events))).toEqual(new Set(['exchangeCalls']));
    expect((summary.samples.planner?.samples ?? 0) + (summary.samples.actor?.samples ?? 0)).toBeGreaterThan(0);
    expect(result.checkpoint?.step).toBe(5);
  });

  it.each([
    ['standard', { rollout: { kind: 'standard', maxTurns: 2, batchRequests: 'local' } }, 'standard-rollout-1'],
    ['tree', { rl: { steps: 1, promptsPerStep: 2, groupSize: 3 }, rollout: { kind: 'tree', maxTurns: 2, batchRequests: 'local' }, tree: { initialRollouts: 2, expansionIterations: 1, beamSize: 2, samplesPerRoot: 3 } }, 'tree-rollout-1'],
  ] as const)("with rollout.batchRequests 'local', rollout.kind %s makes its calls through exchanges too", async (kind, overrides, rolloutId) => {
    const base = tinyRlConfig({ steps: 1 });
    const config = { ...base, ...overrides, rl: { ...base.rl, ...('rl' in overrides ? overrides.rl : {}) } };
    const { workflowId, handle } = await ctx.startTrainingRun(`local-${kind}`, config);
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rl.map((p) => p.step)).toEqual([1]);
    const events = (await ctx.env.client.workflow.getHandle(`${workflowId}/${rolloutId}`).fetchHistory()).events ?? [];
    const activities = events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
    expect(activities.filter((a) => a === 'generate' || a === 'generateBatch' || a === 'calcWithAttempt' || a === 'calcBatch')).toEqual([]);
    // The calls went through exchanges: a marker each, with the replies that came back together.
    expect(localActivityTypes(events)).toContain('exchangeCalls');
    expect(new Set(localActivityTypes(events))).toEqual(new Set(['exchangeCalls']));
    expect(result.rl[0]!.rows).toBeGreaterThan(0);
  });

  it("runs rollout.kind agent: per step the configured agent command plays each episode against the tools worker's gateway on that step's weights, and its recorded calls are trained", async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('agent', { ...tinyRlConfig(), rollout: { kind: 'agent', maxTurns: 2, maxToolCallsPerAct: 1, agent: { timeoutSec: 60 } } });
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rl.map((p) => [p.step, p.weightVersion])).toEqual([[1, 0], [2, 1]]);
    for (const step of [1, 2]) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/agent-rollout-${step}`).result()) as RolloutSummary;
      expect(summary).toMatchObject({ mode: 'single', episodes: 4 });
      // Every episode's agent process ran and made at least one call through the gateway, recorded and merged.
      expect(summary.rows.filter((r) => r.failure === 'agent-failed')).toEqual([]);
      expect(summary.metrics.generations).toBeGreaterThanOrEqual(4);
      const set = summary.samples.single!;
      expect(set.samples).toBeGreaterThanOrEqual(4);
      expect(set.timelines!.captured).toBe(summary.metrics.generations);
      expect(result.rl[step - 1]!.meanReward).toBe(summary.meanReward);
    }
    // Two GRPO updates on the agent's samples (4 SFT steps, then one checkpoint per RL step).
    expect(result.checkpoint?.step).toBe(6);
  });

  it('runs asynchronously with rl.async.maxStaleness 1: the next rollout runs while a step trains, each step trains its own samples once, never more than one version stale, across a continue-as-new', async () => {
    const config = { ...tinyRlConfig({ steps: 3, async: { maxStaleness: 1 } }), workflow: { continueAsNewEvery: 4 } };
    const { workflowId, handle } = await ctx.startTrainingRun('async', config);
    const result = (await handle.result()) as TrainingRunResult;
    // Step 2's rollout started on v0 while step 1 trained; step 3's on v1 while step 2 trained.
    expect(result.rl.map((p) => [p.step, p.weightVersion])).toEqual([[1, 0], [2, 0], [3, 1]]);
    for (const [i, p] of result.rl.entries()) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${p.step}`).result()) as RolloutSummary;
      const samples = [summary.samples.planner, summary.samples.actor].reduce((n, s) => n + (s?.samples ?? 0), 0);
      // Trained once: the step's rows are exactly its own rollout's samples.
      expect(p.rows + p.skipped).toBe(samples);
      expect(p.schedule).toMatchObject({ maxStaleness: 1, droppedStale: 0, staleness: { [i === 0 ? '0' : '1']: samples } });
      expect(p.schedule!.trainerIdle).toBeGreaterThanOrEqual(0);
      expect(p.schedule!.inferenceIdle).toBeLessThanOrEqual(1);
    }
    // The overlap, from the first execution's history: rollout 2 began before step 1's update ended.
    const history = await ctx.env.client.workflow.getHandle(workflowId, handle.firstExecutionRunId).fetchHistory();
    const events = history.events ?? [];
    const rollout2 = events.findIndex((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId === `${workflowId}/rollout-2`);
    const trained = events.findIndex((e) => e.activityTaskCompletedEventAttributes && events.find((s) => Number(s.eventId) === Number(e.activityTaskCompletedEventAttributes!.scheduledEventId))?.activityTaskScheduledEventAttributes?.activityType?.name === 'trainGrpo');
    expect(rollout2).toBeGreaterThan(0);
    expect(trained).toBeGreaterThan(rollout2);
    // The metrics file has the schedule of every step.
    const lines = parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8')).rl;
    expect(lines.map((l) => l.schedule?.staleness)).toEqual(result.rl.map((p) => p.schedule!.staleness));
  });

  it('runs other rollout kinds asynchronously too: standard single-agent rollouts with maxStaleness 2 and truncated IS', async () => {
    const config = { ...tinyRlConfig({ steps: 4, async: { maxStaleness: 2, correction: 'tis', isCap: 2 } }), rollout: { kind: 'standard', maxTurns: 2 } };
    const { workflowId, handle } = await ctx.startTrainingRun('async-standard', config);
    const result = (await handle.result()) as TrainingRunResult;
    // Steps 1-3 start together on v0; step 4 starts on v1 when step 2 begins.
    expect(result.rl.map((p) => [p.step, p.weightVersion])).toEqual([[1, 0], [2, 0], [3, 0], [4, 1]]);
    expect(result.rl.map((p) => Object.keys(p.schedule!.staleness))).toEqual([['0'], ['1'], ['2'], ['2']]);
    for (const p of result.rl) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/standard-rollout-${p.step}`).result()) as RolloutSummary;
      expect(p.rows + p.skipped).toBe(summary.samples.single!.samples);
      // Stale steps were corrected: weights, some of them capped at 2, around 1 on average.
      if (p.step > 1 && p.rows > 0) expect(p.schedule!.meanWeight).toBeGreaterThan(0);
    }
  });

  it('runs SFT, then per RL step a rollout child and a GRPO update, with RL evaluations, metrics file and curves', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('rl', tinyRlConfig());
    const result = (await handle.result()) as TrainingRunResult;

    expect(result.sftSteps).toBe(4);
    expect(result.rlSteps).toBe(2);
    expect(result.rl.map((p) => p.step)).toEqual([1, 2]);
    // The end-of-SFT eval's weights (v0) serve RL eval 0 and rollout 1; rollout 2 gets v1; the final evals v2.
    expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 1]);
    expect(result.evals.map((e) => [e.step, e.weightVersion])).toEqual([[4, 0], [6, 2]]);
    expect(result.rlEvals.map((e) => [e.step, e.weightVersion])).toEqual([[0, 0], [2, 2]]);
    for (const e of result.rlEvals) {
      expect(e.greedy.total).toBe(4);
      expect(e.sampled?.total).toBe(4);
      expect(e.greedy.stderr).toBeCloseTo(Math.sqrt((e.greedy.accuracy * (1 - e.greedy.accuracy)) / 4), 10);
    }
    expect(result.comparison?.sftOnly.greedy).toEqual(result.rlEvals[0]!.greedy);
    expect(result.comparison?.rl.greedy).toEqual(result.rlEvals[1]!.greedy);
    expect(result.comparison?.moreSft).toBeUndefined();
    expect(result.weights?.version).toBe(2);
    // Every publish and the starting checkpoint carry the heartbeat timeout: a training worker
    // killed during them is noticed after timeouts.heartbeatSec, not after trainSec (bench:chaos
    // once stalled on a publish).
    const heartbeats = await heartbeatTimeouts(handle);
    expect(heartbeats.publishWeights?.length).toBeGreaterThan(0);
    expect(heartbeats.initPolicy).toHaveLength(1);
    const heartbeatSec = parseRunConfig(tinyRlConfig()).timeouts.heartbeatSec;
    expect([...heartbeats.publishWeights!, ...heartbeats.initPolicy!].every((sec) => sec === heartbeatSec)).toBe(true);

    // One checkpoint per SFT chunk and per RL step, and one named result per RL step.
    const ckptNames = await ctx.store.listNames(names.checkpointPrefix(workflowId));
    expect(ckptNames).toEqual([0, 2, 4, 5, 6].map((s) => names.checkpoint(workflowId, s)));
    expect(decodeCheckpoint(await ctx.store.get((await ctx.store.getName(names.checkpoint(workflowId, 6)))!)).step).toBe(6);
    for (const [i, step] of [5, 6].entries()) {
      const out = await getJson<TrainGrpoOutput>(ctx.store, (await ctx.store.getName(names.rlStep(workflowId, step)))!);
      expect(out.checkpoint.name).toBe(names.checkpoint(workflowId, step));
      expect(out.rows).toBe(result.rl[i]!.rows);
      // Two epochs of two mini-batches (one per prompt group): four optimiser steps.
      expect(out.optimizerSteps).toBe(4);
      expect(result.rl[i]!.update?.optimizerSteps).toBe(4);
    }

    // Each RL step ran its rollout as a child workflow; the step's accuracy is its episodes'.
    for (const step of [1, 2]) {
      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${step}`).result()) as RolloutSummary;
      expect(summary.episodes).toBe(4);
      expect(summary.meanReward).toBe(result.rl[step - 1]!.meanReward);
      expect(result.rl[step - 1]!.accuracy).toBe(summary.rows.filter((r) => r.reward > 0).length / 4);
      const s = result.rl[step - 1]!.seconds;
      expect(s.rollout).toBeGreaterThan(0);
      expect(s.train).toBeGreaterThan(0);
    }

    // The metrics file has every SFT step, evaluation and RL step once; the curves are a PNG next to it.
    const metrics = parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8'), result.metricsFile);
    expect(metrics.sftLoss.map((l) => l.step)).toEqual([1, 2, 3, 4]);
    expect(metrics.rl.map((p) => [p.step, p.meanReward])).toEqual(result.rl.map((p) => [p.step, p.meanReward]));
    // Every sample a step took, in the file that keeps all steps (the result keeps the last 50).
    expect(metrics.rl.map((p) => [p.rows, p.skipped])).toEqual(result.rl.map((p) => [p.rows, p.skipped]));
    // The SFT-distribution check after RL is in the result, not on the SFT curve.
    expect(metrics.evals.map((e) => `${e.phase}:${e.step}`).sort()).toEqual(['rl:0', 'rl:2', 'sft:4']);
    expect(metrics.baselines.map((b) => b.label)).toEqual(['SFT only']);
    expect(fs.readFileSync(result.metricsFile!, 'utf8').trim().split('\n')).toHaveLength(4 + 3 + 2 + 1);
    expect(fs.readFileSync(result.curvesPng!).subarray(1, 4).toString()).toBe('PNG');

    expect(await handle.query(progressQuery)).toEqual(expect.objectContaining({ phase: 'done', step: 6, totalSteps: 6, rlStep: 2 }));
  });

  it('with compare.moreSft, gives the RL start the same wall time of more SFT and evaluates it', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('rl-compare', { ...tinyRlConfig({ steps: 1 }), compare: { moreSft: true, sftBudget: 'rl-wall-time' } });
    const result = (await handle.result()) as TrainingRunResult;
    const c = result.comparison!;
    expect(c.moreSft).toBeDefined();
    expect(c.moreSft!.steps).toBeGreaterThan(0);
    expect(c.moreSft!.steps! % 2).toBe(0); // whole chunks of sft.stepsPerActivity
    // It stops at the first chunk boundary past RL's seconds.
    expect(c.moreSft!.seconds).toBeGreaterThanOrEqual(c.rl.seconds!);
    // Its checkpoints live under their own run key, branching from the checkpoint RL started from.
    const branch = await ctx.store.listNames(names.checkpointPrefix(`${workflowId}~more-sft`));
    expect(branch.at(-1)).toBe(names.checkpoint(`${workflowId}~more-sft`, 4 + c.moreSft!.steps!));
    expect(result.rlEvals).toHaveLength(2);
  });
});

describe('dynamic sampling', () => {
  it('rolls out further batches of new prompts until enough groups have reward spread, then trains on those only', async () => {
    const { workflowId, handle } = await ctx.startTrainingRun('rl-dynamic', tinyRlConfig({ steps: 1, dynamicSampling: { enabled: true, maxBatchesPerStep: 3 } }));
    const result = (await handle.result()) as TrainingRunResult;
    const point = result.rl[0]!;
    const summaries = await Promise.all(
      [`${workflowId}/rollout-1`, `${workflowId}/rollout-1-b1`, `${workflowId}/rollout-1-b2`].slice(0, point.rolloutBatches).map(
        async (id) => (await ctx.env.client.workflow.getHandle(id).result()) as RolloutSummary,
      ),
    );
    const spread = groupsWithSpread(summaries.flatMap((s) => s.rows));
    // It stopped at the first batch that filled the step, or at the limit.
    expect(point.keptGroups).toBe(Math.min(2, spread.length));
    expect(point.rolloutBatches === 3 || point.keptGroups === 2).toBe(true);
    // Each batch drew other prompts.
    const prompts = summaries.map((s) => [...new Set(s.rows.map((r) => r.expression))].join(','));
    expect(new Set(prompts).size).toBe(summaries.length);
    // Only the kept groups' samples were trained on (a flat group's samples would have advantage 0 rows).
    const out = await getJson<TrainGrpoOutput>(ctx.store, (await ctx.store.getName(names.rlStep(workflowId, 5)))!);
    if (point.keptGroups === 0) expect(out.rows).toBe(0);
    else expect(out.flatGroups).toBe(0);
    expect(out.groups).toBe(point.keptGroups);
  });
});

describe('bounded history', () => {
  it('continues-as-new every chunk and step with a bounded state; the result stays small, the metrics file complete', async () => {
    const config = {
      ...tinyRlConfig({ steps: 1 }),
      sft: { steps: 60, batchSize: 2, stepsPerActivity: 20, warmupSteps: 1 },
      workflow: { continueAsNewEvery: 1 },
    };
    const { workflowId, handle } = await ctx.startTrainingRun('rl-can', config);
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.sftSteps).toBe(60);
    expect(result.rlSteps).toBe(1);
    // Three SFT chunks and one RL step, each followed by a new execution: at least four continues.
    const executions = [];
    for await (const w of ctx.env.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) executions.push(w);
    expect(executions.length).toBeGreaterThanOrEqual(4);
    // The state and result keep the last 50 losses; the metrics file has all 60.
    expect(result.losses.map((l) => l.step)).toEqual(Array.from({ length: 50 }, (_, i) => 11 + i));
    expect(parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8')).sftLoss).toHaveLength(60);
    expect(Buffer.byteLength(JSON.stringify(result))).toBeLessThan(64 * 1024);
    expect(result.comparison?.sftOnly).toEqual({ greedy: result.rlEvals[0]!.greedy, sampled: result.rlEvals[0]!.sampled, tools: result.rlEvals[0]!.tools });
  });
});

describe('init.fromRun', () => {
  it('starts from an earlier run\'s checkpoint (no SFT repeated), going on as that run would: its step, Adam state and SFT schedule', async () => {
    const first = await ctx.startTrainingRun('sft-only', tinyRunConfig());
    await first.handle.result();
    const firstCkpt = decodeCheckpoint(await ctx.store.get((await ctx.store.getName(names.checkpoint(first.workflowId, 4)))!));

    const { workflowId, handle } = await ctx.startTrainingRun('from-run', {
      ...tinyRlConfig({ steps: 1 }),
      sft: { steps: 0, batchSize: 4, stepsPerActivity: 2, warmupSteps: 1 },
      init: { fromRun: first.workflowId },
      compare: { moreSft: true, sftBudget: { sequences: 8 } },
    });
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.backend).toBe(`from run ${first.workflowId}`);
    expect(result.sftSteps).toBe(0);
    expect(result.rlSteps).toBe(1);
    // This run starts at the earlier run's step 4 with its weights and its optimiser state.
    const start = decodeCheckpoint(await ctx.store.get((await ctx.store.getName(names.checkpoint(workflowId, 4)))!));
    expect(start.weights).toEqual(firstCkpt.weights);
    expect(start.optimizer?.step).toBe(firstCkpt.optimizer!.step);
    expect(start.optimizer?.m).toEqual(firstCkpt.optimizer!.m);
    expect(result.checkpoint?.step).toBe(5);
    // Progress counts on from the earlier run's step: 4 + 1 RL step.
    expect(await handle.query(progressQuery)).toMatchObject({ phase: 'done', step: 5, totalSteps: 5 });
    const scheduled = ((await handle.fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    expect(scheduled).not.toContain('initPolicy');
    expect((await heartbeatTimeouts(handle)).checkpointFromRun).toEqual([parseRunConfig(tinyRlConfig()).timeouts.heartbeatSec]);
    // More SFT goes on from step 4 (steps 5 and 6: new batches, the schedule's learning rate there)
    // with the Adam state it had, instead of warming up again from step 1 (issue 24).
    const branch = `${workflowId}~more-sft`;
    const moreSft = decodeCheckpoint(await ctx.store.get((await ctx.store.getName(names.checkpoint(branch, 6)))!));
    expect(moreSft.optimizer?.step).toBe(firstCkpt.optimizer!.step + 2);
    expect(await ctx.store.getName(names.checkpoint(branch, 2))).toBeUndefined();
    expect(result.comparison?.moreSft?.steps).toBe(2);

    const other = await ctx.startTrainingRun('from-run-bad', { ...tinyRlConfig({ steps: 1 }), model: { dModel: 16, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, sft: { steps: 0 }, init: { fromRun: first.workflowId } });
    await expect(other.handle.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/init\.fromRun: model\.dModel is 16 here but 32/) } });
  });
});

describe('tree rollouts', () => {
  it('with rollout.kind tree, each RL step runs a treeRollout child and trains on its outputs, the leaves of a root as its group', async () => {
    const base = tinyRlConfig({ steps: 1, promptsPerStep: 2, groupSize: 3 });
    const { workflowId, handle } = await ctx.startTrainingRun('rl-tree', {
      ...base,
      rollout: { kind: 'tree', maxTurns: 2 },
      tree: { initialRollouts: 2, expansionIterations: 1, beamSize: 2, samplesPerRoot: 3 },
    });
    const result = (await handle.result()) as TrainingRunResult;
    expect(result.rlSteps).toBe(1);
    const tree = await ctx.env.client.workflow.getHandle(`${workflowId}/tree-rollout-1`).result() as RolloutSummary;
    expect(tree.rows).toHaveLength(2 * 3);
    expect(new Set(tree.rows.map((r) => r.groupId))).toEqual(new Set(['r1-p0', 'r1-p1']));
    expect(tree.tree!.leaves).toBeGreaterThanOrEqual(2 * 2);
    // The step trained on the tree's outputs: one merged sample per output path.
    expect(result.rl[0]!.rows).toBe(tree.samples.actor!.samples);
    expect(result.rl[0]!.timelines).toMatchObject({ merged: 6 });
  });

  it('refuses dynamic sampling with tree rollouts, naming the field', async () => {
    const { handle } = await ctx.startTrainingRun('rl-tree-dynamic', { ...tinyRlConfig(), rollout: { kind: 'tree' }, rl: { dynamicSampling: { enabled: true } } });
    await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/rl\.dynamicSampling\.enabled/) } });
  });
});

/** Each scheduled activity type's heartbeat timeouts in seconds (0: none), from the run's history. */
async function heartbeatTimeouts(handle: WorkflowHandle): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const e of (await handle.fetchHistory()).events ?? []) {
    const a = e.activityTaskScheduledEventAttributes;
    const name = a?.activityType?.name;
    if (name) (out[name] ??= []).push(Number(a.heartbeatTimeout?.seconds ?? 0));
  }
  return out;
}
