/**
 * The trainGrpo activity in a mock activity context (no Temporal server): it passes the RL options
 * and the reference checkpoint through, heartbeats from inside the update, and refuses KL options
 * without a reference with a non-retryable failure.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTrainingActivities, type TrainGrpoInput, type TrainGrpoOutput } from '../../activities/training';
import { names } from '../../src/store/run-names';
import { RlSchema } from '../../src/config/schema';
import type { Sample } from '../../src/domain/types';
import { initTfBackend } from '../../src/model/backend';
import { encodeCheckpoint, type Checkpoint } from '../../src/model/checkpoint';
import { initWeights } from '../../src/model/init';
import { getJson, putJson } from '../../src/store/blob-store';
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import type { CheckpointInfo } from '../../src/contracts/weights';
import { tempStore } from '../helpers/store';

const config = { vocabSize: 16, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };

beforeAll(async () => {
  await initTfBackend();
});

function sample(episodeId: string, groupId: string, reward: number, response: number[]): Sample {
  return {
    promptTokens: [1, 2],
    responseTokens: response,
    logprobs: response.map(() => -2.5),
    lossMask: response.map(() => 1),
    reward,
    metadata: { role: 'single', episodeId, groupId, turn: 0, weightVersion: 0 },
  };
}

async function setup(runId: string) {
  const store = tempStore('train-grpo');
  const ckpt: Checkpoint = { config, weights: initWeights(config, 2), step: 4 };
  const ref = await store.put(encodeCheckpoint(ckpt), 'checkpoint');
  const checkpoint: CheckpointInfo = { name: names.checkpoint(runId, 4), ref, step: 4 };
  const samples = [sample('a', 'g0', 1, [4, 5, 6]), sample('b', 'g0', 0, [7, 8]), sample('c', 'g1', 0, [9, 10, 11]), sample('d', 'g1', 1, [12])];
  const samplesRef = await putJson(store, { samples }, 'samples-single');
  const input = (rl: Record<string, unknown>, extra: Partial<TrainGrpoInput> = {}): TrainGrpoInput => ({
    runId,
    checkpoint,
    samples: [{ role: 'single', ref: samplesRef, samples: samples.length, responseTokens: 9, meanReward: 0.5 }],
    step: 5,
    rl: RlSchema.parse({ promptsPerStep: 2, learningRate: 1e-2, ...rl }),
    resetOptimizer: true,
    ...extra,
  });
  return { store, checkpoint, input, activities: createTrainingActivities({ store }) };
}

test('KL options without a reference checkpoint fail non-retryably, naming the missing input', async () => {
  const { activities, input } = await setup('run-no-ref');
  const env = new MockActivityEnvironment();
  const err = await env.run(activities.trainGrpo, input({ useKlLoss: true })).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect((err as ApplicationFailure).nonRetryable).toBe(true);
  expect((err as ApplicationFailure).message).toMatch(/reference/);
});

test('passes the options and the reference through and heartbeats during the update', async () => {
  const { activities, input, checkpoint } = await setup('run-ref');
  const env = new MockActivityEnvironment();
  const beats: unknown[] = [];
  env.on('heartbeat', (d: unknown) => beats.push(d));
  const out: TrainGrpoOutput = await env.run(activities.trainGrpo, input({ ppoEpochs: 2, miniBatches: 2, useKlLoss: true, useKlInReward: true, temperature: 0.7 }, { reference: checkpoint }));
  expect(out.optimizerSteps).toBe(4);
  // The first mini-batch sees the reference itself (KL 0); the updates after it move away from it.
  expect(out.klLoss).toBeGreaterThan(0);
  expect(out.rewardKlPenalty).toBeGreaterThan(0);
  expect(out.checkpoint.name).toBe(names.checkpoint('run-ref', 5));
  expect(beats).toContainEqual(expect.objectContaining({ step: 5, phase: 'reference' }));
  expect(beats.filter((b) => (b as { phase?: string }).phase === 'update' && (b as { microBatch?: number }).microBatch !== undefined).length).toBeGreaterThanOrEqual(4);
});

test('writes the rollout record once: the sample sets, each sample\'s advantage and status, groups dynamic sampling left out', async () => {
  const { activities, input, store } = await setup('run-record');
  const env = new MockActivityEnvironment();
  const out: TrainGrpoOutput = await env.run(activities.trainGrpo, input({}, { keepGroups: ['g0'] }));
  // The record goes to the blob store, not into the activity's result (the history).
  expect(out).not.toHaveProperty('perSample');
  const ref = (await store.getName(names.rolloutRecord('run-record', 5)))!;
  const record = await getJson<RolloutRecord>(store, ref);
  expect(record).toMatchObject({ version: 1, runId: 'run-record', step: 5, policyVersion: 0, policyVersionKnown: false, objective: 'grpo', keepGroups: ['g0'], normAdvByStd: true, advantageNorm: 'episode' });
  expect(record.sets).toEqual(input({}).samples);
  // g0: rewards 1 and 0 (advantages ±1/sqrt(2)); g1 was not kept.
  expect(record.credit.map((c) => c.status)).toEqual(['trained', 'trained', 'not-kept', 'not-kept']);
  expect(record.credit[0]!.advantage).toBeCloseTo(0.7071, 3);
  expect(record.credit[1]!.advantage).toBeCloseTo(-0.7071, 3);
  // A retry finds the result and leaves the record as it was.
  await env.run(activities.trainGrpo, input({}, { keepGroups: ['g0'] }));
  expect(await store.getName(names.rolloutRecord('run-record', 5))).toEqual(ref);
});
