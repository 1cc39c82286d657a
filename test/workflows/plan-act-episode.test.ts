/**
 * Plan/Act episodes and shared-mode jobs on the real dev server. The oracle stand-in for generate
 * (activities/oracle-inference.ts, on a task queue of this file's own) gives well-formed episodes
 * with a fixed latency; the embedded policy (fresh, untrained weights) exercises the default path.
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createOracleInferenceActivities, type OracleCall, type ScriptedCompletion } from '../../activities/oracle-inference';
import type { GenerateBatchInput, GenerateInput } from '../../activities/inference';
import { readSamples } from '../../src/contracts/sample-set';
import { createTrainingActivities } from '../../activities/training';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfigInput } from '../../src/config/schema';
import type { Sample } from '../../src/domain/types';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import { resolveLimits } from '../../src/planact/episode';
import type { PlanActEpisodeInput, PlanActEpisodeResult, PlanActGroupResult } from '../../src/contracts/plan-act-episode';
import type { PlanActJobResult } from '../../src/contracts/plan-act-job';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import { FELL_BACK, ROLE } from '../../workflows/search-attributes';
import { jobStateQuery } from '../../workflows/messages';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { WeightsInfo } from '../../src/contracts/weights';
import { historyPayloads, longestNumberArray, scheduledInputs } from '../helpers/history';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { planActEpisodeInput } from '../helpers/plan-act-input';

const ORACLE_LATENCY_MS = 300;
/** The oracle ignores weights; a reference that no engine could load proves it never tries. */
const ORACLE_WEIGHTS: WeightsInfo = { version: 3, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } };

let ctx: TestEnv;
let env: TestWorkflowEnvironment;
let store: FsBlobStore;
const oracleQueue = uniqueId('oracle-episode');
const calls: OracleCall[] = [];
/** Malformed outputs by problem expression (the planner prompt names it). */
const scripts = new Map<string, (input: GenerateInput) => ScriptedCompletion | undefined>();

beforeAll(async () => {
  ctx = await testEnv('plan-act-episode');
  ({ env, store } = ctx);
  await ctx.addWorker({
    taskQueue: oracleQueue,
    activities: createOracleInferenceActivities({
      store,
      latencyMs: ORACLE_LATENCY_MS,
      script: (input) => scripts.get(/^(?:Compute|Evaluate): (\S+)/.exec(input.prompt)?.[1] ?? '')?.(input),
      onCall: (c) => calls.push(c),
    }),
    maxConcurrentActivityTaskExecutions: 256,
  });
});

afterAll(async () => {
  await ctx?.stop();
});

function episodeInput(expression: string, overrides: Partial<PlanActEpisodeInput> = {}): PlanActEpisodeInput {
  return planActEpisodeInput(expression, { weights: ORACLE_WEIGHTS, inferenceQueue: oracleQueue }, overrides);
}

async function runEpisode(input: PlanActEpisodeInput) {
  const handle = await env.client.workflow.start('planActEpisode', { taskQueue: TASK_QUEUES.orchestration, workflowId: input.episodeId, args: [input] });
  return { handle, result: (await handle.result()) as PlanActEpisodeResult };
}

async function samplesOf(set: SampleSetRef | undefined): Promise<Sample[]> {
  expect(set).toBeDefined();
  return readSamples(store, set!.ref);
}

describe('planActEpisode', () => {
  it('with plannerCredit correct-results, an episode whose actor answered an act wrongly trains the actor and not the planner', async () => {
    // The actor of 17+25 answers a wrong value after its calculator call. (The scripted planner plans
    // from the expression, not from the RESULT lines, so here the episode still answers right.)
    scripts.set('17+25', (input) => (input.role === 'actor' && input.prompt.includes('<result>') ? { text: '41', finishReason: 'eos' } : undefined));
    try {
      const wrong = (await runEpisode(episodeInput('17+25+8', { plannerCredit: 'correct-results' }))).result;
      expect(wrong.turns[0]!.acts.find((a) => a.expression === '17+25')?.result).toBe('41');
      expect(wrong.plannerNotTrained).toBe(true);
      expect(wrong.samples.planner).toBeUndefined();
      expect((await samplesOf(wrong.samples.actor)).length).toBeGreaterThan(0);
      // Without the option the same episode trains the planner on its outcome.
      const outcome = (await runEpisode(episodeInput('17+25+8'))).result;
      expect(outcome.plannerNotTrained).toBeUndefined();
      expect((await samplesOf(outcome.samples.planner)).length).toBeGreaterThan(0);
      // An episode whose results were all right trains the planner either way.
      const right = (await runEpisode(episodeInput('3+4+5', { plannerCredit: 'correct-results' }))).result;
      expect(right.reward).toBe(1);
      expect((await samplesOf(right.samples.planner)).length).toBeGreaterThan(0);
    } finally {
      scripts.delete('17+25');
    }
  });

  it('runs concurrent acts that overlap in time, writes the reward on every sample and keeps the history readable', async () => {
    const { handle, result } = await runEpisode(episodeInput('12+34+56+78'));

    expect(result).toMatchObject({ status: 'answered', answer: '180', expected: 180, reward: 1 });
    expect(result.failure).toBeUndefined();
    expect(result.turns.map((t) => t.kind)).toEqual(['acts', 'acts', 'answer']);
    expect(result.turns[0]!.plan).toBe('ACT 1: 12+34\nACT 2: 56+78\n');
    expect(result.turns[0]!.acts.map((a) => [a.id, a.expression, a.result])).toEqual([['1', '12+34', '46'], ['2', '56+78', '134']]);
    expect(result.turns[0]!.results).toBe('RESULT 1: 46\nRESULT 2: 134\n');
    expect(result.metrics).toMatchObject({ turns: 3, acts: 3, maxConcurrentActs: 2, generations: 3 + 3 * 2 });
    expect(result.metrics.tools).toMatchObject({ calls: 3, failures: 0, retries: 0 });

    // Overlap, measured twice: in workflow time by the episode, and in wall time by the engine.
    const [a1, a2] = result.turns[0]!.acts;
    expect(a1!.startMs).toBeLessThan(a2!.endMs);
    expect(a2!.startMs).toBeLessThan(a1!.endMs);
    const actorSpans = (actId: string) => {
      const mine = calls.filter((c) => c.input.role === 'actor' && c.input.prompt.startsWith(`Evaluate: ${actId === '1' ? '12+34' : '56+78'}\n`));
      return { start: Math.min(...mine.map((c) => c.startedAt)), end: Math.max(...mine.map((c) => c.endedAt)) };
    };
    const w1 = actorSpans('1');
    const w2 = actorSpans('2');
    const overlapMs = Math.min(w1.end, w2.end) - Math.max(w1.start, w2.start);
    // Each act is two generations of ORACLE_LATENCY_MS; run one after the other they could not overlap.
    expect(overlapMs).toBeGreaterThan(ORACLE_LATENCY_MS);
    expect(a1!.endMs - a1!.startMs + (a2!.endMs - a2!.startMs)).toBeGreaterThan(Math.max(a1!.endMs, a2!.endMs) - Math.min(a1!.startMs, a2!.startMs));

    const planner = await samplesOf(result.samples.planner);
    const actor = await samplesOf(result.samples.actor);
    expect(planner).toHaveLength(3);
    expect(actor).toHaveLength(6);
    for (const s of [...planner, ...actor]) {
      expect(s.reward).toBe(1);
      expect(s.metadata).toMatchObject({ episodeId: result.episodeId, weightVersion: 3, groupId: 'g0' });
      expect(s.lossMask).toHaveLength(s.responseTokens.length);
      expect(s.logprobs).toHaveLength(s.responseTokens.length);
    }
    expect(planner.map((s) => [s.metadata.role, s.metadata.turn, s.metadata.actId])).toEqual([['planner', 1, undefined], ['planner', 2, undefined], ['planner', 3, undefined]]);
    expect(actor.map((s) => `${s.metadata.role}:${s.metadata.turn}:${s.metadata.actId}`).sort()).toEqual(
      ['actor:1:1', 'actor:1:1', 'actor:1:2', 'actor:1:2', 'actor:2:3', 'actor:2:3'],
    );

    // The Web UI shows the plan text, acts and results; token arrays stay in the blob store.
    const payloads = historyPayloads(await handle.fetchHistory());
    const text = JSON.stringify(payloads.map((p) => p.value));
    expect(text).toContain('ACT 1: 12+34');
    expect(text).toContain('RESULT 1: 46');
    for (const p of payloads) {
      expect(p.bytes).toBeLessThan(64 * 1024);
      expect(longestNumberArray(p.value)).toBeLessThanOrEqual(16);
    }
  });

  it('ends the episode with reward 0 and a recorded reason on malformed model output, without failing the workflow', async () => {
    const cases: Array<{ expression: string; script: (i: GenerateInput) => ScriptedCompletion | undefined; code: string; turns: number }> = [
      { expression: '1+2', script: (i) => (i.role === 'planner' ? { text: 'let me think about it', finishReason: 'eos' } : undefined), code: 'plan-no-plan', turns: 1 },
      { expression: '2+3', script: (i) => (i.role === 'planner' ? { text: 'ACT one: 2+3\n', finishReason: 'eos' } : undefined), code: 'plan-bad-act', turns: 1 },
      { expression: '3+4', script: (i) => (i.role === 'planner' ? { text: 'ACT 1: 3+'.repeat(12), finishReason: 'length' } : undefined), code: 'planner-length', turns: 1 },
      {
        expression: '4+5',
        script: (i) => (i.role === 'planner' ? { text: [1, 2, 3, 4, 5].map((n) => `ACT ${n}: 4+5\n`).join(''), finishReason: 'eos' } : undefined),
        code: 'plan-too-many-acts',
        turns: 1,
      },
      { expression: '5+6', script: (i) => (i.role === 'actor' ? { text: 'eleven', finishReason: 'eos' } : undefined), code: 'actor-bad-answer', turns: 1 },
      {
        // The planner answers wrong after a correct act: a well-formed episode with reward 0.
        expression: '6+7',
        script: (i) => (i.role === 'planner' && i.prompt.includes('RESULT') ? { text: 'ANSWER: 12\n', finishReason: 'eos' } : undefined),
        code: '',
        turns: 2,
      },
    ];
    for (const c of cases) scripts.set(c.expression, c.script);
    const results = await Promise.all(cases.map((c) => runEpisode(episodeInput(c.expression)).then((r) => r.result)));
    for (const [i, r] of results.entries()) {
      const c = cases[i]!;
      expect(r.reward).toBe(0);
      expect(r.turns).toHaveLength(c.turns);
      if (c.code === '') {
        expect(r).toMatchObject({ status: 'answered', answer: '12' });
      } else {
        expect(r.status).toBe('failed');
        expect(r.failure?.code).toBe(c.code);
        expect(r.failure?.message.length).toBeGreaterThan(5);
      }
      for (const s of [...(await samplesOf(r.samples.planner)), ...(r.samples.actor ? await samplesOf(r.samples.actor) : [])]) expect(s.reward).toBe(0);
    }
  });

  it('shows a calculator error to the actor and counts it as a tool failure', async () => {
    // The actor writes an expression the calculator refuses, then gives up with a non-number.
    scripts.set('7+8', (i) => {
      if (i.role !== 'actor') return undefined;
      return i.prompt.includes('<result>') ? { text: 'oops', finishReason: 'eos' } : { text: '<calc>7/8</calc>', finishReason: 'stop' };
    });
    const { result } = await runEpisode(episodeInput('7+8'));
    expect(result.metrics.tools).toMatchObject({ calls: 1, failures: 1, retries: 0 });
    expect(result.failure?.code).toBe('actor-bad-answer');
    const actorPrompt = calls.filter((c) => c.input.role === 'actor' && c.input.prompt.startsWith('Evaluate: 7+8')).at(-1)!.input.prompt;
    expect(actorPrompt).toMatch(/<result>error: calc\("7\/8"\): .+<\/result>/);
  });

  it('merges its timelines: one planner sample for all its turns, one actor sample per act, the model\'s tokens marked', async () => {
    const timeline = parseRunConfig({}).timeline;
    const { result } = await runEpisode(episodeInput('12+34+56+78', { timeline }));
    expect(result.reward).toBe(1);
    const planner = await samplesOf(result.samples.planner);
    const actor = await samplesOf(result.samples.actor);
    // Three planner calls and six actor calls (two per act) captured; each chain merged into its longest call.
    expect(result.samples.planner!.timelines).toMatchObject({ captured: 3, merged: 1, driftRepaired: 0 });
    expect(result.samples.actor!.timelines).toMatchObject({ captured: 6, merged: 3, driftRepaired: 0 });
    expect(planner.map((s) => s.metadata.turn)).toEqual([3]);
    expect(actor.map((s) => s.metadata.actId).sort()).toEqual(['1', '2', '3']);

    // The oracle's token ids are UTF-8 bytes: read back what each sample trains on and what it only reads.
    const spans = (s: Sample, mask: number) => {
      const out: string[] = [];
      let cur: number[] = [];
      s.responseTokens.forEach((id, i) => {
        if (s.lossMask[i] === mask) cur.push(id);
        else if (cur.length > 0) {
          out.push(Buffer.from(cur).toString());
          cur = [];
        }
      });
      if (cur.length > 0) out.push(Buffer.from(cur).toString());
      return out;
    };
    const p = planner[0]!;
    expect(Buffer.from(p.promptTokens).toString()).toBe('Compute: 12+34+56+78\n');
    expect(spans(p, 1)).toEqual(['ACT 1: 12+34\nACT 2: 56+78\n<|eos|>', 'ACT 3: 46+134\n<|eos|>', 'ANSWER: 180\n<|eos|>']);
    // Between the model's turns (each closed by its end-of-turn token): the RESULT lines, read but not trained on.
    expect(spans(p, 0)).toEqual(['RESULT 1: 46\nRESULT 2: 134\n', 'RESULT 3: 180\n']);
    const act1 = actor.find((s) => s.metadata.actId === '1')!;
    expect(spans(act1, 1)).toEqual(['<calc>12+34</calc>', '46<|eos|>']);
    expect(spans(act1, 0)).toEqual(['\n<result>46</result>\n']);
    // Merging trains on fewer tokens than one sample per call would: the shared prefixes once.
    const tokens = (xs: Sample[]) => xs.reduce((n, s) => n + s.promptTokens.length + s.responseTokens.length, 0);
    expect(result.samples.planner!.timelines!.tokensAfter).toBe(tokens(planner));
    expect(result.samples.planner!.timelines!.tokensBefore).toBeGreaterThan(2 * tokens(planner));

    // timeline.merge false: a sample per call; snapDetection: the three acts' survivors part at their first message.
    const unmerged = await runEpisode(episodeInput('12+34+56+78', { timeline: { ...timeline, merge: false } }));
    expect(unmerged.result.samples.planner).toMatchObject({ samples: 3 });
    expect(unmerged.result.samples.planner!.timelines).toBeUndefined();
    const snapped = await runEpisode(episodeInput('12+34+56+78', { timeline: { ...timeline, snapDetection: true } }));
    expect(snapped.result.samples.actor!.timelines!.snaps).toEqual({ text: 3 });
    expect(snapped.result.samples.planner!.timelines!.snaps).toEqual({});
  });

  it('runs on the embedded policy: untrained weights give malformed output, recorded as reward 0', async () => {
    const training = createTrainingActivities({ store });
    const runId = uniqueId('embedded-episode');
    const init = await training.initPolicy({ runId, model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 128 }, seed: 3 });
    const weights = await training.publishWeights({ runId, checkpoint: init.checkpoint, version: 0 });
    const { result } = await runEpisode(
      episodeInput('11+22', { policies: { planner: { weights }, actor: { weights } }, limits: resolveLimits({ maxTurns: 2, plannerMaxNewTokens: 16, actorMaxNewTokens: 16 }) }),
    );
    expect(result.reward).toBe(0);
    expect(result.failure?.code).toMatch(/^(plan-|planner-|actor-|tool-|max-turns)/);
    const planner = await samplesOf(result.samples.planner);
    expect(planner[0]!.metadata).toMatchObject({ role: 'planner', turn: 1, weightVersion: 0 });
    expect(planner[0]!.responseTokens.length).toBeGreaterThan(0);
    expect(planner[0]!.logprobs.every((lp) => lp <= 0 && Number.isFinite(lp))).toBe(true);
  });
});

describe('planActEpisodes: the requests a group makes together go as one activity', () => {
  async function runGroup(inputs: PlanActEpisodeInput[]) {
    const handle = await env.client.workflow.start('planActEpisodes', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('group'), args: [inputs] });
    const result = (await handle.result()) as PlanActGroupResult;
    const history = await handle.fetchHistory();
    return {
      result,
      generateBatches: scheduledInputs<GenerateBatchInput>(history, 'generateBatch').map((b) => b.requests),
      calcBatches: scheduledInputs<{ expressions: string[] }>(history, 'calcBatch').map((b) => b.expressions),
      perRequest: scheduledInputs<unknown>(history, 'generate').length + scheduledInputs<unknown>(history, 'calcWithAttempt').length,
    };
  }

  it('one generateBatch per wave of the group and one calcBatch per wave of tool calls, every episode as it plays alone', async () => {
    // Four episodes of one problem: each plans two acts, then a third, then answers (9 generations, 3 calculator calls).
    const group = [0, 1, 2, 3].map(() => episodeInput('12+34+56+78'));
    const { result, generateBatches, calcBatches, perRequest } = await runGroup(group);
    expect(perRequest).toBe(0);
    // The waves: plans, the acts' tool calls, their answers, plans, act 3's tool call, its answer, answers.
    expect(generateBatches.map((b) => b.length)).toEqual([4, 8, 8, 4, 4, 4, 4]);
    expect(generateBatches[0]!.every((r) => r.role === 'planner')).toBe(true);
    expect(calcBatches).toEqual([Array(4).fill(['12+34', '56+78']).flat(), Array(4).fill('46+134')]);
    expect(result.episodes).toHaveLength(4);
    const alone = (await runEpisode(episodeInput('12+34+56+78'))).result;
    for (const e of result.episodes) {
      expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
      expect(e.metrics).toMatchObject({ turns: 3, acts: 3, generations: 9, maxConcurrentActs: 2, tools: { calls: 3, failures: 0, retries: 0 } });
      expect(e.turns.map((t) => t.results)).toEqual(alone.turns.map((t) => t.results));
    }
    const actor = await samplesOf(result.samples.actor);
    expect(actor).toHaveLength(4 * 6);
  });

  it('with rollout.batchRequests false, one activity per call and the same episodes', async () => {
    const group = [0, 1].map(() => episodeInput('12+34+56+78', { batchRequests: false }));
    const { result, generateBatches, calcBatches, perRequest } = await runGroup(group);
    expect(generateBatches).toEqual([]);
    expect(calcBatches).toEqual([]);
    // Per episode: 9 generations and 3 calculator calls, each its own activity.
    expect(perRequest).toBe(2 * (9 + 3));
    for (const e of result.episodes) expect(e).toMatchObject({ status: 'answered', answer: '180', reward: 1 });
  });

  it("one episode's bad calculator input is its own: the other episode of the batch gets its value", async () => {
    // Problems no other test scripts: 17+9's actor writes an expression the calculator refuses.
    scripts.set('17+9', (i) => {
      if (i.role !== 'actor') return undefined;
      return i.prompt.includes('<result>') ? { text: 'oops', finishReason: 'eos' } : { text: '<calc>17/9</calc>', finishReason: 'stop' };
    });
    try {
      const { result, calcBatches } = await runGroup([episodeInput('17+9'), episodeInput('19+6')]);
      expect(calcBatches).toEqual([['17/9', '19+6']]);
      const [bad, good] = result.episodes;
      expect(bad!.failure?.code).toBe('actor-bad-answer');
      expect(bad!.metrics.tools).toMatchObject({ calls: 1, failures: 1, retries: 0 });
      expect(good).toMatchObject({ status: 'answered', answer: '25', reward: 1 });
      expect(good!.metrics.tools).toMatchObject({ calls: 1, failures: 0, retries: 0 });
    } finally {
      scripts.delete('17+9');
    }
  });
});

describe('planActJob, shared mode (one policy plays both roles)', () => {
  const sharedConfig = (experiment: string): RunConfigInput => ({
    experiment,
    seed: 5,
    task: { difficulty: { minTerms: 3, maxTerms: 4, minDigits: 1, maxDigits: 2 } },
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 128 },
    rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 16 },
    rollout: { mode: 'shared', maxTurns: 4 },
    timeouts: { heartbeatSec: 10 },
  });

  it('runs GRPO groups of episodes per rollout and returns samples of both roles with the episode reward', async () => {
    const workflowId = uniqueId('shared-oracle');
    const handle = await env.client.workflow.start('planActJob', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId,
      args: [{ role: 'shared', config: sharedConfig('shared-oracle'), rolloutIds: [1, 2], weights: ORACLE_WEIGHTS, inferenceQueue: oracleQueue, train: false }],
    });
    const result = (await handle.result()) as PlanActJobResult;
    expect(result.rollouts.map((r) => [r.rolloutId, r.outcome, r.episodes, r.meanReward])).toEqual([[1, 'shared', 4, 1], [2, 'shared', 4, 1]]);
    expect(result.fallbacks).toBe(0);
    for (const r of result.rollouts) {
      const planner = await samplesOf(r.samples.planner);
      const actor = await samplesOf(r.samples.actor);
      expect(new Set([...planner, ...actor].map((s) => s.metadata.groupId))).toEqual(new Set([`r${r.rolloutId}-p0`, `r${r.rolloutId}-p1`]));
      expect(new Set(planner.map((s) => s.metadata.episodeId)).size).toBe(4);
      expect([...planner, ...actor].every((s) => s.reward === 1 && s.metadata.weightVersion === 3)).toBe(true);
    }
    expect(await handle.query(jobStateQuery)).toMatchObject({ phase: 'done', role: 'shared', remaining: [] });
    const d = await handle.describe();
    expect(d.typedSearchAttributes.get(ROLE)).toBe('shared');
    expect(d.typedSearchAttributes.get(FELL_BACK)).toBe(false);
  });

  it('works with the default embedded policy: a fresh policy is initialised, published and rolled out', async () => {
    const handle = await env.client.workflow.start('planActJob', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: uniqueId('shared-embedded'),
      args: [{ role: 'shared', config: { ...sharedConfig('shared-embedded'), rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 12 } } }],
    });
    const result = (await handle.result()) as PlanActJobResult;
    // One rollout with v0, then one GRPO update on both roles' samples, published as v1.
    expect(result.weights.version).toBe(1);
    expect(result.rollouts).toHaveLength(1);
    expect(result.rollouts[0]).toMatchObject({ rolloutId: 1, outcome: 'shared', episodes: 2, weightVersion: 0, training: { step: 1, weightVersion: 1 } });
    const planner = await samplesOf(result.rollouts[0]!.samples.planner);
    expect(planner.every((s) => s.metadata.role === 'planner' && s.metadata.weightVersion === 0)).toBe(true);
  });

  it('trains its GRPO step on merged timelines: one row per surviving timeline, not per call', async () => {
    const handle = await env.client.workflow.start('planActJob', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: uniqueId('shared-merged-train'),
      // Episodes on the oracle (well-formed, multi-turn), training on the job's own fresh policy.
      args: [{ role: 'shared', config: { ...sharedConfig('shared-merged-train'), model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 256 } }, inferenceQueue: oracleQueue }],
    });
    const result = (await handle.result()) as PlanActJobResult;
    const r = result.rollouts[0]!;
    const { planner, actor } = r.samples;
    expect(planner!.timelines!.merged).toBe(r.episodes);
    expect(planner!.timelines!.captured).toBeGreaterThan(planner!.timelines!.merged);
    expect(actor!.timelines!.captured).toBe(2 * actor!.timelines!.merged);
    // Every merged sample fits maxSeq and has the model's tokens, so each is one training row.
    expect(r.training).toMatchObject({ step: 1, weightVersion: 1, rows: planner!.samples + actor!.samples });
    expect(planner!.samples + actor!.samples).toBeLessThan(planner!.timelines!.captured + actor!.timelines!.captured);
  });

  it('refuses trainingRun-only keys (SFT demonstrations, init, compare), naming them', async () => {
    const handle = await env.client.workflow.start('planActJob', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: uniqueId('shared-sft-keys'),
      args: [
        {
          role: 'shared',
          config: { ...sharedConfig('sft-keys'), task: { demoToolUseRate: 0.3 }, compare: { moreSft: true }, workflow: { continueAsNewEvery: 2 } },
        },
      ],
    });
    await expect(handle.result()).rejects.toMatchObject({
      cause: { type: 'ConfigError', message: expect.stringMatching(/compare\.moreSft.*task\.demoToolUseRate.*workflow\.continueAsNewEvery/) },
    });
  });

  it('refuses a config whose rollout mode does not match the role, with a typed error', async () => {
    const handle = await env.client.workflow.start('planActJob', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: uniqueId('shared-bad-mode'),
      args: [{ role: 'planner', config: sharedConfig('bad-mode') }],
    });
    await expect(handle.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/rollout\.mode: dual/) } });
  });
});
