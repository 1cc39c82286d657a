import { runPlanActEpisode } from '../../src/planact/episode';
import { DEFAULT_EPISODE_LIMITS } from '../../src/planact/episode-types';
import { calc, evaluateExpression } from '../../src/tasks/arith/calc';
import type { ArithDifficulty } from '../../src/tasks/arith/difficulty';
import { oraclePlan } from '../../src/tasks/arith/oracle';
import { oracleGenerate } from '../../src/tasks/arith/oracle-policy';
import { generateProblems, problemFromExpression, type ArithProblem } from '../../src/tasks/arith/problem';
import { arithReward } from '../../src/tasks/arith/reward';
import { oracleSftExamples, sftExampleText } from '../../src/tasks/arith/sft';
import { arithTask } from '../../src/tasks/arith/task';

const DIFFICULTIES: ArithDifficulty[] = [
  { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+'] },
  { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+', '-'] },
  { minTerms: 2, maxTerms: 8, minDigits: 1, maxDigits: 4, operators: ['+', '-', '*'] },
  { minTerms: 8, maxTerms: 8, minDigits: 1, maxDigits: 1, operators: ['*'] },
];

const deps = (p: ArithProblem) => ({ generate: oracleGenerate(p), calc: async (x: string) => calc(x) });

describe('oracle plan', () => {
  it('pairs adjacent terms into concurrent acts (the documented example)', () => {
    expect(oraclePlan(problemFromExpression('17+25+8+31'))).toEqual([
      { kind: 'acts', acts: [{ id: '1', expression: '17+25', result: '42' }, { id: '2', expression: '8+31', result: '39' }] },
      { kind: 'acts', acts: [{ id: '3', expression: '42+39', result: '81' }] },
      { kind: 'answer', value: '81' },
    ]);
  });

  it('respects precedence and carries signs on the literal text', () => {
    const turns = oraclePlan(problemFromExpression('2*3+4*5*6-7*2'));
    const exprs = turns.map((t) => (t.kind === 'acts' ? t.acts.map((a) => a.expression) : [`=${t.value}`]));
    expect(exprs).toEqual([['2*3', '4*5', '-7*2'], ['20*6'], ['6+120'], ['126-14'], ['=112']]);
    const minus = oraclePlan(problemFromExpression('17+25-8-31'));
    expect(minus[0]).toEqual({ kind: 'acts', acts: [{ id: '1', expression: '17+25', result: '42' }, { id: '2', expression: '-8-31', result: '-39' }] });
    expect(minus[1]).toEqual({ kind: 'acts', acts: [{ id: '3', expression: '42-39', result: '3' }] });
  });

  it('caps acts per turn', () => {
    const p = problemFromExpression('1+2+3+4+5+6+7+8');
    for (const t of oraclePlan(p, 2)) if (t.kind === 'acts') expect(t.acts.length).toBeLessThanOrEqual(2);
    expect(oraclePlan(p, 2).at(-1)).toEqual({ kind: 'answer', value: '36' });
  });

  it('gets reward 1 when replayed through the episode driver, on every difficulty', async () => {
    for (const [i, difficulty] of DIFFICULTIES.entries()) {
      for (const p of generateProblems({ seed: 100 + i, count: 60, split: 'train', difficulty })) {
        const plan = oraclePlan(p);
        expect(plan.length).toBeLessThanOrEqual(DEFAULT_EPISODE_LIMITS.maxTurns);
        for (const t of plan) {
          if (t.kind === 'acts') {
            expect(t.acts.length).toBeLessThanOrEqual(DEFAULT_EPISODE_LIMITS.maxActsPerTurn);
            for (const a of t.acts) expect(String(evaluateExpression(a.expression))).toBe(a.result);
          }
        }
        const result = await runPlanActEpisode(p, deps(p), { task: arithTask });
        expect(result.failure).toBeUndefined();
        expect(result.finalAnswer).toBe(String(p.answer));
        expect(result.reward).toBe(1);
        expect(result.metrics.toolFailures).toBe(0);
        expect(result.metrics.toolCalls).toBe(result.metrics.acts);
      }
    }
  });
});

describe('oracle SFT examples', () => {
  it('are exactly the texts the episode driver produces, with model text marked for training', async () => {
    for (const p of generateProblems({ seed: 5, count: 40, split: 'train', difficulty: DIFFICULTIES[2]! })) {
      const [planner, ...actors] = oracleSftExamples(p);
      const result = await runPlanActEpisode(p, deps(p), { task: arithTask });
      expect(planner!.role).toBe('planner');
      expect(sftExampleText(planner!)).toBe(result.plannerTranscript);
      const acts = result.turns.flatMap((t) => t.acts);
      expect(actors.map(sftExampleText)).toEqual(acts.map((a) => a.transcript));
      expect(actors.map((a) => a.actId)).toEqual(acts.map((a) => a.id));
      for (const ex of [planner!, ...actors]) {
        expect(ex.segments[0]!.train).toBe(false);
        expect(ex.segments.at(-1)!.train).toBe(true);
        for (const s of ex.segments) expect(s.text.endsWith('<|eos|>')).toBe(s.train && (ex.role === 'planner' || s === ex.segments.at(-1)));
      }
    }
  });

  it('look like the documented format', () => {
    const [planner, actor] = oracleSftExamples(problemFromExpression('17+25+8+31'));
    expect(planner!.segments).toEqual([
      { text: 'Compute: 17+25+8+31\n', train: false },
      { text: 'ACT 1: 17+25\nACT 2: 8+31\n<|eos|>', train: true },
      { text: 'RESULT 1: 42\nRESULT 2: 39\n', train: false },
      { text: 'ACT 3: 42+39\n<|eos|>', train: true },
      { text: 'RESULT 3: 81\n', train: false },
      { text: 'ANSWER: 81\n<|eos|>', train: true },
    ]);
    expect(actor!.segments).toEqual([
      { text: 'Evaluate: 17+25\n', train: false },
      { text: '<calc>17+25</calc>', train: true },
      { text: '\n<result>42</result>\n', train: false },
      { text: '42<|eos|>', train: true },
    ]);
  });
});

describe('arith reward', () => {
  it('is 1 only for the exact integer value', () => {
    const p = problemFromExpression('3-8');
    expect(arithReward(p, '-5')).toBe(1);
    expect(arithReward(p, ' -5 ')).toBe(1);
    expect(arithReward(p, '5')).toBe(0);
    expect(arithReward(p, '-5.0')).toBe(0);
    expect(arithReward(p, 'minus five')).toBe(0);
    expect(arithReward(p, null)).toBe(0);
    expect(arithTask.reward(p, '-5')).toBe(1);
  });
});

describe('demonstrations with a tool-use rate', () => {
  const problems = generateProblems({ seed: 5, count: 400, split: 'train', difficulty: { minTerms: 2, maxTerms: 3, minDigits: 1, maxDigits: 2, operators: ['+'] } });
  const actorsOf = (rate: number) => problems.flatMap((p) => oracleSftExamples(p, { toolUseRate: rate }).filter((e) => e.role === 'actor'));

  it('calls the calculator in about that share of acts, the same acts every time', () => {
    const actors = actorsOf(0.3);
    const withTool = actors.filter((a) => a.segments.some((s) => s.text.startsWith('<calc>')));
    expect(withTool.length / actors.length).toBeGreaterThan(0.25);
    expect(withTool.length / actors.length).toBeLessThan(0.35);
    expect(actorsOf(0.3).map(sftExampleText)).toEqual(actors.map(sftExampleText));
    expect(actorsOf(1).every((a) => a.segments.some((s) => s.text.startsWith('<calc>')))).toBe(true);
    expect(actorsOf(0).some((a) => a.segments.some((s) => s.text.startsWith('<calc>')))).toBe(false);
  });

  it('a direct answer is the right value, written by the model, and the planner example is unchanged', () => {
    const p = problemFromExpression('17+25+8');
    const [planner, ...actors] = oracleSftExamples(p, { toolUseRate: 0 });
    expect(planner).toEqual(oracleSftExamples(p)[0]);
    expect(actors[0]!.segments).toEqual([
      { text: 'Evaluate: 17+25\n', train: false },
      { text: '42<|eos|>', train: true },
    ]);
  });
});
