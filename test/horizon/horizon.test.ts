import { horizonSamples, type HorizonEpisodeSamples } from '../../activities/horizon-samples';
import type { CompletionTokens } from '../../src/contracts/generation';
import type { Sample } from '../../src/domain/types';
import {
  advance,
  assignHorizons,
  chunkLogprobs,
  episodeReward,
  horizonMetricKeys,
  needsReplan,
  newPlan,
  nextChunk,
  parsePlan,
  planReward,
  runHorizonEpisode,
  successByHorizon,
  sumHorizonMetricKeys,
  type HorizonEpisodeOptions,
} from '../../src/horizon';
import { groupAdvantage } from '../../src/rl/advantages';
import { buildPgBatch } from '../../src/rl/grpo';
import { executeChunk, layoutFromId, parseObservation, type Move } from '../../src/tasks/grid';

describe('horizon assignment', () => {
  it('cycles the pattern over a batch, and every batch starts the cycle afresh', () => {
    expect(assignHorizons([5, 10, 15], 7)).toEqual([5, 10, 15, 5, 10, 15, 5]);
    expect(assignHorizons([5, 10, 15], 7)).toEqual(assignHorizons([5, 10, 15], 7));
    expect(assignHorizons([4], 3)).toEqual([4, 4, 4]);
    // Groups of 6 episodes per prompt: each prompt sees every horizon twice.
    const batch = assignHorizons([5, 10, 15], 8 * 6);
    for (let p = 0; p < 8; p++) expect([...batch.slice(p * 6, p * 6 + 6)].sort((a, b) => a - b)).toEqual([5, 5, 10, 10, 15, 15]);
    expect(() => assignHorizons([], 3)).toThrow(RangeError);
    expect(() => assignHorizons([0], 3)).toThrow(RangeError);
  });
});

describe('plans and the plan cache', () => {
  it('parses exactly H moves; anything else is a typed plan error', () => {
    expect(parsePlan('URDLX', 5)).toEqual({ ok: true, moves: ['U', 'R', 'D', 'L', 'X'] });
    expect(parsePlan('URD<|eos|>', 5)).toMatchObject({ ok: false, error: 'short-plan' });
    expect(parsePlan('UR3DL', 5)).toMatchObject({ ok: false, error: 'bad-move', message: expect.stringMatching(/"3" at position 2/) });
    expect(parsePlan('', 1)).toMatchObject({ ok: false, error: 'short-plan' });
  });

  it('hands out chunks from the offset and asks for a new plan when the offset reaches H', () => {
    expect(needsReplan(null)).toBe(true);
    let cache = newPlan(1, 12, [...'UUUURRRRDDDD'] as Move[]);
    expect(nextChunk(cache, 5, 100)).toEqual({ offset: 0, moves: [...'UUUUR'] });
    cache = advance(cache, 5);
    expect(nextChunk(cache, 5, 100)).toEqual({ offset: 5, moves: [...'RRRDD'] });
    cache = advance(cache, 5);
    // The plan's end cuts the last chunk short; then the cache is spent.
    expect(nextChunk(cache, 5, 100)).toEqual({ offset: 10, moves: [...'DD'] });
    expect(needsReplan(cache)).toBe(false);
    cache = advance(cache, 2);
    expect(needsReplan(cache)).toBe(true);
    // The step budget cuts a chunk too.
    expect(nextChunk(newPlan(2, 10, [...'RRRRRRRRRR'] as Move[]), 5, 3).moves).toHaveLength(3);
    expect(() => advance(newPlan(1, 2, ['U', 'U']), 3)).toThrow(RangeError);
    expect(() => newPlan(1, 3, ['U'])).toThrow(RangeError);
  });

  it("a chunk's logprobs are its slice of the plan's", () => {
    const plan = [-0.1, -0.2, -0.3, -0.4, -0.5, -0.6];
    expect(chunkLogprobs(plan, 2, 3)).toEqual([-0.3, -0.4, -0.5]);
    expect(() => chunkLogprobs(plan, 4, 3)).toThrow(RangeError);
  });
});

describe('the plan reward', () => {
  const opts = { usePlanReward: true, planRewardCoef: 0.1, baseH: 5 };
  it('is paid only on success, scaled by H / baseH, and only with usePlanReward', () => {
    expect(planReward(true, 15, opts)).toBeCloseTo(0.3, 12);
    expect(planReward(true, 5, opts)).toBeCloseTo(0.1, 12);
    expect(planReward(false, 15, opts)).toBe(0);
    expect(planReward(true, 15, { ...opts, usePlanReward: false })).toBe(0);
    expect(episodeReward(true, 10, opts)).toEqual({ task: 1, plan: 0.2, total: 1.2 });
    expect(episodeReward(false, 10, opts)).toEqual({ task: 0, plan: 0, total: 0 });
  });

  it('changes GRPO advantages in layout groups, and none in one-H groups unless advantages are not std-normalised (why the config rejects that case)', () => {
    const outcomes: Array<[boolean, number]> = [[true, 5], [false, 5], [true, 10], [false, 10], [true, 15], [false, 15]];
    const scores = (use: boolean) => outcomes.map(([ok, h]) => episodeReward(ok, h, { ...opts, usePlanReward: use }).total);
    const grpo = { normAdvByStd: true, epsilon: 1e-6 };
    // A layout's group spans the horizons: the bonus lifts the successful long plans above the short.
    const layout = groupAdvantage(scores(true), grpo);
    expect(layout[4]!).toBeGreaterThan(layout[0]! + 0.1);
    const layoutWithout = groupAdvantage(scores(false), grpo);
    expect(layoutWithout[4]).toBeCloseTo(layoutWithout[0]!, 12);
    // A group of one H: every score is multiplied by the same factor, which the std divides out.
    const oneH = (use: boolean, o = grpo) => groupAdvantage(scores(use).slice(4), o);
    expect(oneH(true)[0]).toBeCloseTo(oneH(false)[0]!, 5);
    const drGrpo = { normAdvByStd: false, epsilon: 1e-6 };
    expect(oneH(true, drGrpo)[0]).toBeCloseTo(1.3 * oneH(false, drGrpo)[0]!, 12);
  });
});

describe('runHorizonEpisode', () => {
  // Goal 8 moves away: R R R R then D D D D.
  const layout = layoutFromId(['A....', '.....', '.....', '.....', '....G'].join('/'));
  const base: HorizonEpisodeOptions = { horizon: 5, numActionChunks: 2, maxSteps: 16, usePlanReward: true, planRewardCoef: 0.1, baseH: 5 };
  const scripted = (plans: string[]) => {
    const prompts: string[] = [];
    return {
      prompts,
      deps: {
        plan: async (prompt: string) => {
          prompts.push(prompt);
          return { text: plans[prompts.length - 1] ?? '', ref: prompts.length };
        },
        execute: async (l: typeof layout, from: { row: number; col: number }, moves: Move[]) => executeChunk(l, from, moves),
      },
    };
  };

  it('executes chunks of numActionChunks from the offset and replans from the new observation at H', async () => {
    const { prompts, deps } = scripted(['RRRRD', 'DDDXX']);
    const r = await runHorizonEpisode(layout, base, deps);
    expect(r.success).toBe(true);
    expect(r.steps).toBe(8);
    expect(r.chunks.map((c) => [c.planIndex, c.chunkOffset, c.moves, c.executed])).toEqual([
      [1, 0, 'RR', 2],
      [1, 2, 'RR', 2],
      [1, 4, 'D', 1],
      [2, 0, 'DD', 2],
      [2, 2, 'DX', 1],
    ]);
    // The second plan was written from where the first left the agent.
    expect(parseObservation(prompts[1]!)!.at).toEqual({ row: 1, col: 4 });
    expect(r.plans.map((p) => p.at)).toEqual([{ row: 0, col: 0 }, { row: 1, col: 4 }]);
    expect(r.reward).toEqual({ task: 1, plan: 0.1, total: 1.1 });
  });

  it('ends at the step budget without reward, and on a plan that is not H moves', async () => {
    const stuck = await runHorizonEpisode(layout, { ...base, maxSteps: 6 }, scripted(['XXXXX', 'XXXXX']).deps);
    expect(stuck).toMatchObject({ success: false, steps: 6, failure: 'step-budget', reward: { total: 0 } });
    // The budget cuts the second plan's first chunk to one move.
    expect(stuck.chunks.at(-1)!.moves).toBe('X');
    const bad = await runHorizonEpisode(layout, base, scripted(['RR?']).deps);
    expect(bad).toMatchObject({ success: false, failure: 'bad-plan', steps: 0, chunks: [] });
    expect(bad.plans[0]!.error).toBe('bad-move');
  });
});

describe('per-H metrics and training samples', () => {
  it('counts success per horizon', () => {
    const rows = successByHorizon([
      { horizon: 10, success: true },
      { horizon: 5, success: true },
      { horizon: 5, success: false },
      { horizon: 10, success: true },
    ]);
    expect(rows.map(({ horizon, success, total, rate }) => [horizon, success, total, rate])).toEqual([
      [5, 1, 2, 0.5],
      [10, 2, 2, 1],
    ]);
    expect(horizonMetricKeys(rows)).toEqual({
      plan_h5_success_count: 1,
      plan_h5_total_count: 2,
      plan_h5_success_rate: 0.5,
      plan_h10_success_count: 2,
      plan_h10_total_count: 2,
      plan_h10_success_rate: 1,
    });
    // Summed back over steps (the summary of a stretch of RL), with the rate from the sums.
    const other = horizonMetricKeys(successByHorizon([{ horizon: 5, success: true }]));
    expect(sumHorizonMetricKeys([horizonMetricKeys(rows), other])).toEqual(
      successByHorizon([
        { horizon: 10, success: true },
        { horizon: 10, success: true },
        { horizon: 5, success: true },
        { horizon: 5, success: false },
        { horizon: 5, success: true },
      ]),
    );
  });

  const tokens: CompletionTokens = { promptTokenIds: [1, 2, 3], tokenIds: [10, 11, 12, 13, 14], logprobs: [-1, -2, -3, -4, -5], entropy: [0, 0, 0, 0, 0] };
  const episode = (reward: number, id: string): HorizonEpisodeSamples => ({
    episodeId: id,
    groupId: 'g',
    reward,
    plans: [{ planIndex: 1, horizon: 5, tokens: { sha256: 'x', bytes: 1, kind: 'completion-tokens' }, weightVersion: 3, chunks: [{ chunkOffset: 0, executed: 2 }, { chunkOffset: 2, executed: 1 }] }],
  });

  it('one sample per executed chunk, trained on its slice of the plan, with planHorizon and chunkOffset', () => {
    const samples = horizonSamples(episode(1, 'e1'), () => tokens);
    expect(samples.map((s) => [s.metadata.planHorizon, s.metadata.chunkOffset, s.lossMask, s.logprobs])).toEqual([
      [5, 0, [1, 1, 0, 0, 0], [-1, -2, 0, 0, 0]],
      [5, 2, [0, 0, 1, 0, 0], [0, 0, -3, 0, 0]],
    ]);
    // A plan that was not H moves: one sample, every token trained (so RL can push it down).
    const bad = horizonSamples({ ...episode(0, 'e2'), plans: [{ ...episode(0, 'e2').plans[0]!, chunks: undefined }] }, () => tokens);
    expect(bad.map((s) => [s.metadata.chunkOffset, s.lossMask])).toEqual([[0, [1, 1, 1, 1, 1]]]);
  });

  it('metric-only values never enter a training batch', () => {
    const samples: Sample[] = [...horizonSamples(episode(1, 'e1'), () => tokens), ...horizonSamples(episode(0, 'e2'), () => tokens)];
    const metricKey = /success|total_count|rate|plan_h/;
    const keysOf = (x: object, prefix = ''): string[] =>
      Object.entries(x).flatMap(([k, v]) => [prefix + k, ...(v && typeof v === 'object' && !Array.isArray(v) ? keysOf(v as object, `${prefix}${k}.`) : [])]);
    for (const s of samples) expect(keysOf(s).filter((k) => metricKey.test(k))).toEqual([]);
    const { batch } = buildPgBatch(samples, { normAdvByStd: true, epsilon: 1e-6, maxSeq: 64 });
    expect(Object.keys(batch).sort()).toEqual(['advantages', 'lossMask', 'oldLogprobs', 'tokens']);
    expect(batch.tokens).toHaveLength(4);
    // Each row is numbers only: prompt and plan tokens, nothing else.
    for (const row of batch.tokens) expect(row.every((t) => Number.isInteger(t))).toBe(true);
  });
});
