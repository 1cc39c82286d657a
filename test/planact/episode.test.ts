import { runPlanActEpisode } from '../../src/planact/episode';
import type { EpisodeDeps, GenerateMeta, GenerateOutput, PlanActRole } from '../../src/planact/episode-types';
import type { PlanActTask } from '../../src/planact/task';
import { calc, CalcInputError } from '../../src/tasks/arith/calc';
import { problemFromExpression } from '../../src/tasks/arith/problem';
import { arithTask } from '../../src/tasks/arith/task';

type Reply = GenerateOutput | string;
type Script = (role: PlanActRole, prompt: string, meta: GenerateMeta) => Reply | Promise<Reply>;

function fakeDeps(script: Script, tool: (x: string) => Promise<string> = async (x) => calc(x)): EpisodeDeps & { calls: Array<{ role: PlanActRole; meta: GenerateMeta }> } {
  const calls: Array<{ role: PlanActRole; meta: GenerateMeta }> = [];
  return {
    calls,
    async generate(role, prompt, meta) {
      calls.push({ role, meta });
      const reply = await script(role, prompt, meta);
      return typeof reply === 'string' ? { text: reply, finishReason: 'eos' } : reply;
    },
    calc: tool,
  };
}

/** An actor that calls the calculator once and copies its result. */
function copyingActor(prompt: string): Reply {
  const m = /<result>(.*)<\/result>\n$/.exec(prompt);
  if (m) return m[1]!;
  return { text: `<calc>${/^Evaluate: (.*)\n/.exec(prompt)![1]}</calc>`, finishReason: 'stop' };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const problem = problemFromExpression('17+25+8+31');
const opts = { task: arithTask, episodeId: 'ep-1' };

describe('runPlanActEpisode', () => {
  it('lays out the planner context turn by turn and records every generation', async () => {
    const planner = ['ACT 1: 17+25\nACT 2: 8+31\n', 'ACT 3: 42+39\n', 'ANSWER: 81\n'];
    const deps = fakeDeps((role, prompt, meta) => (role === 'planner' ? planner[meta.turn - 1]! : copyingActor(prompt)));
    const r = await runPlanActEpisode(problem, deps, opts);
    expect(r).toMatchObject({ status: 'answered', finalAnswer: '81', reward: 1, episodeId: 'ep-1' });
    const plannerPrompts = r.generations.filter((g) => g.role === 'planner').map((g) => g.prompt);
    expect(plannerPrompts).toEqual([
      'Compute: 17+25+8+31\n',
      'Compute: 17+25+8+31\nACT 1: 17+25\nACT 2: 8+31\n<|eos|>RESULT 1: 42\nRESULT 2: 39\n',
      'Compute: 17+25+8+31\nACT 1: 17+25\nACT 2: 8+31\n<|eos|>RESULT 1: 42\nRESULT 2: 39\nACT 3: 42+39\n<|eos|>RESULT 3: 81\n',
    ]);
    expect(r.generations.map((g) => [g.role, g.turn, g.actId, g.step])).toEqual([
      ['planner', 1, undefined, 0],
      ['actor', 1, '1', 0],
      ['actor', 1, '1', 1],
      ['actor', 1, '2', 0],
      ['actor', 1, '2', 1],
      ['planner', 2, undefined, 0],
      ['actor', 2, '3', 0],
      ['actor', 2, '3', 1],
      ['planner', 3, undefined, 0],
    ]);
    expect(r.generations[2]!.prompt).toBe('Evaluate: 17+25\n<calc>17+25</calc>\n<result>42</result>\n');
    expect(r.turns[0]!.acts[0]!.transcript).toBe('Evaluate: 17+25\n<calc>17+25</calc>\n<result>42</result>\n42<|eos|>');
    expect(r.turns[0]!.resultsText).toBe('RESULT 1: 42\nRESULT 2: 39\n');
    expect(r.metrics).toEqual({ turns: 3, acts: 3, toolCalls: 3, toolFailures: 0, generations: 9, maxConcurrentActs: 2 });
    expect(deps.calls.find((c) => c.role === 'actor')!.meta.stop).toEqual(['</calc>']);
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it('ends with reward 0 and a reason on unparseable planner output', async () => {
    const r = await runPlanActEpisode(problem, fakeDeps(() => 'I think it is 81'), opts);
    expect(r).toMatchObject({ status: 'failed', reward: 0, finalAnswer: null });
    expect(r.failure).toMatchObject({ code: 'plan-no-plan', turn: 1 });
    expect(r.failure!.message).toContain('no ACT or ANSWER line');
    expect(r.turns).toHaveLength(1);
    expect(r.turns[0]!.kind).toBe('invalid');
  });

  it('ends on bad act syntax, too many acts and a runaway planner', async () => {
    const bad = await runPlanActEpisode(problem, fakeDeps(() => 'ACT one: 17+25\n'), opts);
    expect(bad.failure?.code).toBe('plan-bad-act');
    const many = await runPlanActEpisode(problem, fakeDeps(() => 'ACT 1: 1+1\nACT 2: 1+1\nACT 3: 1+1\n'), { ...opts, maxActsPerTurn: 2 });
    expect(many.failure?.code).toBe('plan-too-many-acts');
    const long = await runPlanActEpisode(problem, fakeDeps(() => ({ text: 'ACT 1: 1+1+1+1+1+1+1+1', finishReason: 'length' })), opts);
    expect(long).toMatchObject({ reward: 0, failure: { code: 'planner-length', turn: 1 } });
  });

  it('ends when the planner never answers', async () => {
    let id = 0;
    const deps = fakeDeps((role, prompt) => (role === 'planner' ? `ACT ${++id}: 1+1\n` : copyingActor(prompt)));
    const r = await runPlanActEpisode(problem, deps, { ...opts, maxTurns: 3 });
    expect(r).toMatchObject({ status: 'failed', reward: 0, failure: { code: 'max-turns', turn: 3 } });
    expect(r.turns).toHaveLength(3);
  });

  it('reuse of an earlier act id is a plan error', async () => {
    const deps = fakeDeps((role, prompt) => (role === 'planner' ? 'ACT 1: 1+1\n' : copyingActor(prompt)));
    const r = await runPlanActEpisode(problem, deps, opts);
    expect(r.failure).toMatchObject({ code: 'plan-duplicate-act-id', turn: 2 });
  });

  it('scores a wrong answer 0 without a failure', async () => {
    const r = await runPlanActEpisode(problem, fakeDeps(() => 'ANSWER: 80\n'), opts);
    expect(r).toMatchObject({ status: 'answered', finalAnswer: '80', reward: 0 });
    expect(r.failure).toBeUndefined();
  });

  it('enforces the tool-call limit per act', async () => {
    const deps = fakeDeps((role) => (role === 'planner' ? 'ACT 1: 1+2\n' : { text: '<calc>1+2</calc>', finishReason: 'stop' }));
    const r = await runPlanActEpisode(problem, deps, { ...opts, maxToolCallsPerAct: 2 });
    expect(r).toMatchObject({ status: 'failed', reward: 0, failure: { code: 'tool-call-limit', turn: 1, actId: '1' } });
    const act = r.turns[0]!.acts[0]!;
    expect(act.toolCalls).toBe(2);
    expect(act.generations).toBe(3);
    expect(act.result).toBeUndefined();
  });

  it('returns tool errors to the actor in-band and counts them', async () => {
    const tool = async (x: string) => {
      if (x === '1+') {
        // Shaped like Temporal's ActivityFailure wrapping the activity's ApplicationFailure.
        throw Object.assign(new Error('Activity task failed'), { cause: new CalcInputError('syntax', 'expected a number at end') });
      }
      return calc(x);
    };
    const deps = fakeDeps((role, prompt, meta) => {
      if (role === 'planner') return meta.turn === 1 ? 'ACT 1: 1+2\n' : 'ANSWER: 3\n';
      if (meta.step === 0) return { text: '<calc>1+</calc>', finishReason: 'stop' };
      if (meta.step === 1) return { text: '<calc>1+2</calc>', finishReason: 'stop' };
      return copyingActor(prompt);
    }, tool);
    const r = await runPlanActEpisode(problemFromExpression('1+2'), deps, opts);
    expect(r).toMatchObject({ status: 'answered', reward: 1 });
    const act = r.turns[0]!.acts[0]!;
    expect(act).toMatchObject({ toolCalls: 2, toolFailures: 1, result: '3' });
    expect(act.transcript).toBe(
      'Evaluate: 1+2\n<calc>1+</calc>\n<result>error: expected a number at end</result>\n<calc>1+2</calc>\n<result>3</result>\n3<|eos|>',
    );
    expect(r.metrics.toolFailures).toBe(1);
  });

  it('handles engines that keep EOS in the text or drop the stop string', async () => {
    const deps = fakeDeps((role, prompt, meta) => {
      if (role === 'planner') return meta.turn === 1 ? 'ACT 1: 1+2\n<|eos|>' : 'ANSWER: 3\n<|eos|>';
      return meta.step === 0 ? { text: '<calc>1+2', finishReason: 'stop' } : '3<|eos|>';
    });
    const r = await runPlanActEpisode(problemFromExpression('1+2'), deps, opts);
    expect(r.reward).toBe(1);
    expect(r.plannerTranscript).toBe('Compute: 1+2\nACT 1: 1+2\n<|eos|>RESULT 1: 3\nANSWER: 3\n<|eos|>');
    expect(r.turns[0]!.acts[0]!.transcript).toBe('Evaluate: 1+2\n<calc>1+2</calc>\n<result>3</result>\n3<|eos|>');
  });

  it('fails on a runaway or unparseable actor', async () => {
    const runaway = fakeDeps((role) => (role === 'planner' ? 'ACT 1: 1+2\n' : { text: '1111111111', finishReason: 'length' }));
    expect((await runPlanActEpisode(problem, runaway, opts)).failure).toMatchObject({ code: 'actor-length', actId: '1' });
    const chatty = fakeDeps((role) => (role === 'planner' ? 'ACT 1: 1+2\n' : 'three'));
    const r = await runPlanActEpisode(problem, chatty, opts);
    expect(r.failure).toMatchObject({ code: 'actor-bad-answer', actId: '1' });
    expect(r.failure!.message).toContain('"three"');
  });

  it('starts the acts of a turn concurrently and records them in plan order', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const started: string[] = [];
    const deps = fakeDeps(async (role, prompt, meta) => {
      if (role === 'planner') return meta.turn === 1 ? 'ACT 1: 1+1\nACT 2: 2+2\nACT 3: 3+3\n' : 'ANSWER: 0\n';
      started.push(`${meta.actId}:${meta.step}`);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // Act 1 is the slowest, so completion order differs from plan order.
      await sleep(meta.actId === '1' ? 60 : 20);
      inFlight--;
      return copyingActor(prompt);
    });
    const r = await runPlanActEpisode(problem, deps, opts);
    expect(started.slice(0, 3).sort()).toEqual(['1:0', '2:0', '3:0']);
    expect(maxInFlight).toBe(3);
    expect(r.metrics.maxConcurrentActs).toBe(3);
    expect(r.turns[0]!.resultsText).toBe('RESULT 1: 2\nRESULT 2: 4\nRESULT 3: 6\n');
    expect(r.generations.filter((g) => g.role === 'actor').map((g) => `${g.actId}:${g.step}`)).toEqual(['1:0', '1:1', '2:0', '2:1', '3:0', '3:1']);
  });

  it('passes extra generate fields through to the records', async () => {
    interface Tagged extends GenerateOutput {
      tokens: number;
    }
    const deps: EpisodeDeps<Tagged> = {
      generate: async () => ({ text: 'ANSWER: 81\n', finishReason: 'eos', tokens: 5 }),
      calc: async (x) => calc(x),
    };
    const r = await runPlanActEpisode(problem, deps, opts);
    expect(r.generations[0]!.output.tokens).toBe(5);
  });

  it('runs any task and rejects when generate itself fails', async () => {
    const echo: PlanActTask<string> = {
      name: 'echo',
      plannerPrompt: (p) => `Say: ${p}\n`,
      actorPrompt: (_p, e) => `Do: ${e}\n`,
      reward: (p, a) => (a === p ? 1 : 0),
    };
    const r = await runPlanActEpisode('hi', fakeDeps(() => 'ANSWER: hi\n'), { task: echo });
    expect(r).toMatchObject({ reward: 1, episodeId: 'episode' });
    const broken: EpisodeDeps = { generate: async () => Promise.reject(new Error('inference down')), calc: async (x) => x };
    await expect(runPlanActEpisode(problem, broken, opts)).rejects.toThrow('inference down');
    await expect(runPlanActEpisode(problem, broken, { ...opts, maxTurns: 0 })).rejects.toThrow(RangeError);
  });
});
