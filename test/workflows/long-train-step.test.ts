/**
 * A GRPO step of 1,000 episodes under a 5-second heartbeat timeout, on the real dev server with the
 * production training worker and trainingRun's activity options: the update runs far longer than
 * the heartbeat timeout, so it completes on its first attempt only because it heartbeats from
 * inside the work (between micro-batches) and lets the event loop send those heartbeats.
 */
import path from 'node:path';
import type { TrainGrpoInput, TrainGrpoOutput } from '../../activities/training';
import { names } from '../../src/store/run-names';
import { parseRunConfig } from '../../src/config/parse';
import type { Sample } from '../../src/domain/types';
import { encodeCheckpoint } from '../../src/model/checkpoint';
import { DEFAULT_GPT_CONFIG } from '../../src/model/default-config';
import { initWeights } from '../../src/model/init';
import { REPO_ROOT } from '../../src/paths';
import { putJson } from '../../src/store/blob-store';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';

const EPISODES = 1000;
const GROUP = 8;
const HEARTBEAT_SEC = 5;
const QUEUE = 'test-fixtures';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('long-train', ['training']);
  await ctx.addWorker({ taskQueue: QUEUE, workflowBundle: { codePath: path.join(REPO_ROOT, 'dist', 'test-workflow-bundle.js') } });
});

afterAll(async () => {
  await ctx?.stop();
});

/** An episode as a rollout writes it: a 24-token prompt, a 40-token response, rewards mixed within each group. */
function episode(i: number): Sample {
  const vocab = DEFAULT_GPT_CONFIG.vocabSize;
  const response = Array.from({ length: 40 }, (_, k) => 3 + ((i * 7 + k * 13) % (vocab - 3)));
  return {
    promptTokens: Array.from({ length: 24 }, (_, k) => 3 + ((i + k * 5) % (vocab - 3))),
    responseTokens: response,
    logprobs: response.map(() => -Math.log(vocab)),
    lossMask: response.map(() => 1),
    reward: i % 3 === 0 ? 1 : 0,
    metadata: { role: 'single', episodeId: `e${i}`, groupId: `g${Math.floor(i / GROUP)}`, turn: 1, weightVersion: 0 },
  };
}

it(`trains a step of ${EPISODES} episodes with heartbeatSec ${HEARTBEAT_SEC} on its first attempt`, async () => {
  const runId = uniqueId('long-train');
  const ckpt = { config: DEFAULT_GPT_CONFIG, weights: initWeights(DEFAULT_GPT_CONFIG, 1), step: 0 };
  const ref = await ctx.store.put(encodeCheckpoint(ckpt), 'checkpoint');
  const samples = Array.from({ length: EPISODES }, (_, i) => episode(i));
  const samplesRef = await putJson(ctx.store, { samples }, 'samples-single');
  const cfg = parseRunConfig({ timeouts: { heartbeatSec: HEARTBEAT_SEC }, rl: { promptsPerStep: EPISODES / GROUP, groupSize: GROUP } });
  const input: TrainGrpoInput = {
    runId,
    checkpoint: { name: names.checkpoint(runId, 0), ref, step: 0 },
    samples: [{ role: 'single', ref: samplesRef, samples: EPISODES, responseTokens: EPISODES * 40, meanReward: 0.33 }],
    step: 1,
    rl: cfg.rl,
    resetOptimizer: true,
  };
  const handle = await ctx.env.client.workflow.start('trainGrpoOnce', { taskQueue: QUEUE, workflowId: runId, args: [cfg.timeouts, input] });
  const out = (await handle.result()) as TrainGrpoOutput;
  expect(out.checkpoint.step).toBe(1);
  expect(out.optimizerSteps).toBe(1);

  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find((e) => e.activityTaskScheduledEventAttributes)!;
  const started = events.filter((e) => e.activityTaskStartedEventAttributes);
  const completed = events.find((e) => e.activityTaskCompletedEventAttributes)!;
  expect(Number(scheduled.activityTaskScheduledEventAttributes!.heartbeatTimeout!.seconds)).toBe(HEARTBEAT_SEC);
  // One attempt: no heartbeat timeout, no retry.
  expect(started.map((e) => e.activityTaskStartedEventAttributes!.attempt)).toEqual([1]);
  // And the attempt ran well past the heartbeat timeout, so the heartbeats were what kept it alive.
  const seconds = (e: typeof completed) => Number(e.eventTime!.seconds) + e.eventTime!.nanos! / 1e9;
  expect(seconds(completed) - seconds(started[0]!)).toBeGreaterThan(2 * HEARTBEAT_SEC);
}, 300_000);
