/**
 * rollout.batchRequests 'local' (workflows/episode-calls.ts): an episode workflow's generate and
 * calculator calls as local activities of the orchestration worker, whose local calls here are the
 * oracle engine (activities/oracle-inference.ts) and the calculator. The same group played with
 * activities (the oracle on a queue of its own) gives the same episodes; played locally, its history
 * has a marker per call and no call activities, and far fewer workflow tasks. A policy on an
 * inference queue of its own is refused by name, not served by this worker's engine.
 */
import type { GenerateInput } from '../../activities/inference';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { createToolActivities } from '../../activities/tools';
import { resolveLimits } from '../../src/planact/episode';
import type { PlanActEpisodeInput, PlanActGroupResult } from '../../src/contracts/plan-act-episode';
import type { WeightsInfo } from '../../src/contracts/weights';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';

const ORACLE_WEIGHTS: WeightsInfo = { version: 3, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } };
const oracleQueue = uniqueId('oracle-local-calls');
let ctx: TestEnv;
let oracle: ReturnType<typeof createOracleInferenceActivities>;

beforeAll(async () => {
  const tools = createToolActivities();
  ctx = await testEnv('local-calls', ['orchestration', 'tools'], { localCalls: { generate: (input: GenerateInput) => oracle.generate(input), calcWithAttempt: tools.calcWithAttempt } });
  oracle = createOracleInferenceActivities({ store: ctx.store, latencyMs: 50 });
  await ctx.addWorker({ taskQueue: oracleQueue, activities: oracle, maxConcurrentActivityTaskExecutions: 64 });
});

afterAll(async () => {
  await ctx?.stop();
});

function group(expression: string, batchRequests: PlanActEpisodeInput['batchRequests'], inferenceQueue?: string): PlanActEpisodeInput[] {
  const policy = { weights: ORACLE_WEIGHTS, ...(inferenceQueue ? { inferenceQueue } : {}) };
  return [0, 1, 2, 3].map((i) => ({
    runId: 'test-local-calls',
    episodeId: uniqueId(`ep${i}`),
    expression,
    groupId: 'g0',
    policies: { planner: policy, actor: policy },
    limits: resolveLimits({ maxTurns: 4, maxActsPerTurn: 4, maxToolCallsPerAct: 2, plannerMaxNewTokens: 48, actorMaxNewTokens: 48 }),
    sampling: { temperature: 1, topP: 1 },
    seed: 7 + i,
    timeouts: { generateSec: 60, trainSec: 600, toolSec: 10, heartbeatSec: 10 },
    ...(batchRequests !== undefined ? { batchRequests } : {}),
  }));
}

async function play(inputs: PlanActEpisodeInput[]) {
  const handle = await ctx.env.client.workflow.start('planActEpisodes', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('local-calls'), args: [inputs] });
  const result = (await handle.result()) as PlanActGroupResult;
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    result,
    activities: events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [])),
    markers: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

describe("rollout.batchRequests 'local'", () => {
  it('plays the same episodes as activities do, each call a local activity: a marker per call, no call activity, fewer workflow tasks', async () => {
    const viaActivities = await play(group('12+34+56+78', undefined, oracleQueue));
    const local = await play(group('12+34+56+78', 'local'));
    expect(local.activities).toEqual(['writeEpisodeSamples']);
    // Per episode: 9 generations and 3 calculator calls.
    expect(local.markers).toBe(4 * (9 + 3));
    expect(local.workflowTasks).toBeLessThan(viaActivities.workflowTasks);
    expect(viaActivities.activities).toContain('generateBatch');
    const digest = (r: PlanActGroupResult) => r.episodes.map((e) => ({ answer: e.answer, reward: e.reward, turns: e.turns.map((t) => t.results), metrics: { ...e.metrics, episodeMs: 0, actMsTotal: 0, tools: { ...e.metrics.tools, ms: 0 } } }));
    // Timings differ: local calls skip the server's round trips (acts took less time here).
    expect(digest(local.result)).toEqual(digest(viaActivities.result));
    for (const e of local.result.episodes) expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
    expect(local.result.samples.actor?.samples).toBe(viaActivities.result.samples.actor?.samples);
  });

  it("refuses a policy on an inference queue of its own, naming rollout.batchRequests: this worker's engine would serve it otherwise", async () => {
    await expect(play(group('12+34', 'local', oracleQueue))).rejects.toMatchObject({ cause: { message: expect.stringContaining("rollout.batchRequests 'local'") } });
  });
});
