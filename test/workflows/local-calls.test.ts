/**
 * rollout.batchRequests 'local' (workflows/episode-calls.ts, workflows/call-exchange.ts): an episode
 * workflow's generate and calculator calls run by the orchestration worker, whose local calls here
 * are the oracle engine (activities/oracle-inference.ts) and the calculator, through exchange local
 * activities that bring back the replies ready together. The same group played with activities (the
 * oracle on a queue of its own) gives the same episodes; played locally, its history has no call
 * activities, fewer markers than calls, and far fewer workflow tasks. A worker that loses the calls
 * in flight (a restart) has them submitted again, and the episodes come out the same. A policy on an
 * inference queue of its own is refused by name, not served by this worker's engine.
 */
import type { GenerateInput } from '../../activities/inference';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { createToolActivities } from '../../activities/tools';
import { createCallExchangeActivities, type ExchangeCallsInput } from '../../activities/call-exchange';
import type { PlanActEpisodeInput, PlanActGroupResult } from '../../src/contracts/plan-act-episode';
import type { WeightsInfo } from '../../src/contracts/weights';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { DEFAULT_WORKFLOW_BUNDLE } from '../../workers/create-workers';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { planActEpisodeInput } from '../helpers/plan-act-input';

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
  return [0, 1, 2, 3].map((i) => planActEpisodeInput(expression, policy, { runId: 'test-local-calls', seed: 7 + i, ...(batchRequests !== undefined ? { batchRequests } : {}) }));
}

async function play(inputs: PlanActEpisodeInput[], taskQueue: string = TASK_QUEUES.orchestration) {
  const handle = await ctx.env.client.workflow.start('planActEpisodes', { taskQueue, workflowId: uniqueId('local-calls'), args: [inputs] });
  const result = (await handle.result()) as PlanActGroupResult;
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    result,
    activities: events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [])),
    markers: events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity').length,
    workflowTasks: events.filter((e) => e.workflowTaskCompletedEventAttributes).length,
  };
}

const digest = (r: PlanActGroupResult) => r.episodes.map((e) => ({ answer: e.answer, reward: e.reward, turns: e.turns.map((t) => t.results), metrics: { ...e.metrics, episodeMs: 0, actMsTotal: 0, tools: { ...e.metrics.tools, ms: 0 } } }));

describe("rollout.batchRequests 'local'", () => {
  it('plays the same episodes as activities do, the replies ready together in one exchange: fewer markers than calls, no call activity, fewer workflow tasks', async () => {
    const viaActivities = await play(group('12+34+56+78', undefined, oracleQueue));
    const local = await play(group('12+34+56+78', 'local'));
    expect(local.activities).toEqual(['writeEpisodeSamples']);
    // Per episode: 9 generations and 3 calculator calls; the four episodes' replies come back together.
    expect(local.markers).toBeGreaterThan(0);
    expect(local.markers).toBeLessThan((4 * (9 + 3)) / 2);
    expect(local.workflowTasks).toBeLessThan(viaActivities.workflowTasks);
    expect(viaActivities.activities).toContain('generateBatch');
    // Timings differ: local calls skip the server's round trips (acts took less time here).
    expect(digest(local.result)).toEqual(digest(viaActivities.result));
    for (const e of local.result.episodes) expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
    expect(local.result.samples.actor?.samples).toBe(viaActivities.result.samples.actor?.samples);
  });

  it('submits again the calls a restarted worker lost, and plays the same episodes', async () => {
    // This worker's exchanges are the real ones; at the third, its table is replaced by an empty
    // one, as a worker that replays the workflow after a restart has: the calls in flight are gone.
    // Replies spread over more than an exchange's window, so calls are in flight across exchanges.
    const tools = createToolActivities();
    const spread = (input: GenerateInput) => new Promise((r) => setTimeout(r, ((input.params.seed ?? 0) % 4) * 150));
    const targets = { generate: async (input: GenerateInput) => (await spread(input), oracle.generate(input)), calc: async (expression: string) => (await tools.calcWithAttempt({ expression })).value };
    let exchange = createCallExchangeActivities(targets);
    let exchanges = 0;
    let resubmitted = 0;
    const queue = uniqueId('local-calls-restart');
    await ctx.addWorker({
      taskQueue: queue,
      workflowBundle: { codePath: DEFAULT_WORKFLOW_BUNDLE },
      activities: {
        async exchangeCalls(input: ExchangeCallsInput) {
          if (++exchanges === 3) exchange = createCallExchangeActivities(targets);
          const result = await exchange.exchangeCalls(input);
          resubmitted += result.unknown.length;
          return result;
        },
      },
    });
    const clean = await play(group('12+34+56+78', 'local'));
    const restarted = await play(group('12+34+56+78', 'local'), queue);
    expect(resubmitted).toBeGreaterThan(0);
    expect(digest(restarted.result)).toEqual(digest(clean.result));
    for (const e of restarted.result.episodes) expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
  });

  it("retries a failing call in the worker with its activity's policy, and the tool metrics count the retries", async () => {
    // A calculator that fails every expression's first attempt: the exchange retries it, alone.
    const tools = createToolActivities();
    const exchange = createCallExchangeActivities({
      generate: (input: GenerateInput) => oracle.generate(input),
      calc: async (expression: string, attempt: number) => {
        if (attempt === 1) throw new Error('calculator restarting');
        return (await tools.calcWithAttempt({ expression })).value;
      },
    });
    const queue = uniqueId('local-calls-retry');
    await ctx.addWorker({ taskQueue: queue, workflowBundle: { codePath: DEFAULT_WORKFLOW_BUNDLE }, activities: exchange });
    const { result } = await play(group('12+34+56+78', 'local'), queue);
    for (const e of result.episodes) {
      expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
      // Every call of this episode's was retried once, none failed.
      expect(e.metrics.tools).toMatchObject({ calls: 3, failures: 0, retries: 3 });
    }
  });

  it("refuses a policy on an inference queue of its own, naming rollout.batchRequests: this worker's engine would serve it otherwise", async () => {
    await expect(play(group('12+34', 'local', oracleQueue))).rejects.toMatchObject({ cause: { message: expect.stringContaining("rollout.batchRequests 'local'") } });
  });
});
