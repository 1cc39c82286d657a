/**
 * End-to-end accuracy on held-out problems of a distribution: the policy plays planner and actor,
 * once greedily and (optionally) once sampling at the RL temperature with a seed per episode, so
 * the numbers are reproducible for a given set of weights. This is how RL is judged: by the
 * answers, not by imitation of the oracle.
 */
import type { SamplingParams } from '../domain/types';
import type { CompletionSource } from './arith-eval';
import { resolveLimits, runPlanActEpisode, type EpisodeDeps, type EpisodeLimits, type GenerateOutput } from '../planact';
import { episodeSeed, generationSeed } from '../planact/sampling-seed';
import { arithTask, calc, drawProblems, type ArithDifficulty, type ArithProblem, type SplitScheme } from '../tasks/arith';
import type { EpisodeResult } from '../planact/episode-types';
import { accuracyOf, clusteredAccuracy, passAtK, type Accuracy, type ToolUse } from './accuracy';

export { accuracyOf, type Accuracy } from './accuracy';

export interface EpisodeAccuracyOptions {
  /** Chooses the held-out problems (its own stream, apart from training problems). */
  seed: number;
  problems: number;
  difficulty: ArithDifficulty;
  limits: Pick<EpisodeLimits, 'maxTurns' | 'maxActsPerTurn' | 'maxToolCallsPerAct'>;
  maxNewTokens: number;
  /** Also run every problem with sampling at this temperature / top-p (once, or samplesPerProblem times). */
  sampled?: { temperature: number; topP: number };
  /** Sampled episodes per problem (default 1); above 1 the report has pass@1...pass@n. */
  samplesPerProblem?: number;
  /** task.split (absent: expression, as runs recorded before it). */
  scheme?: SplitScheme;
  /** Which held-out problems: validation (default; curves and choices) or test (reported results). */
  part?: 'validation' | 'test';
  onEpisode?: () => void;
}


export interface EpisodeAccuracyReport {
  greedy: Accuracy;
  sampled?: Accuracy;
  /** Failure codes of the greedy episodes (e.g. plan-bad-act: 3), for a person reading the result. */
  failures: Record<string, number>;
  /** One rendered greedy episode, to see what the policy does. */
  example: string;
  /** samplesPerProblem > 1: pass@k for k = 1...n (unbiased estimator over the n samples of each problem). */
  passAtK?: number[];
  /** Greedy episodes: how often acts called the calculator, and accuracy with and without it. */
  tools?: ToolUse;
  /** part test: greedy correctness per problem ('1'/'0', problem order), for paired differences. */
  perProblem?: string;
}

/**
 * The held-out problems of an evaluation: distinct problems of the part (task.split subproblem), or
 * the whole-expression held-out split (expression), each part a seed stream of its own.
 */
export function heldOutProblems(opts: Pick<EpisodeAccuracyOptions, 'seed' | 'problems' | 'difficulty' | 'scheme' | 'part'>): ArithProblem[] {
  const part = opts.part ?? 'validation';
  const scheme = opts.scheme ?? 'expression';
  const seed = part === 'validation' ? opts.seed ^ 0x0e7a_1bed : opts.seed ^ 0x7e57_5e7d;
  return drawProblems({ seed, count: opts.problems, scheme, part, difficulty: opts.difficulty, distinct: scheme === 'subproblem' });
}

/**
 * One engine plays both roles, or (dual mode's joint evaluation) each role its own. The batcher of
 * one engine serves the concurrent episodes' requests together either way.
 */
export async function evaluateEpisodeAccuracy(engines: CompletionSource | Record<'planner' | 'actor', CompletionSource>, opts: EpisodeAccuracyOptions): Promise<EpisodeAccuracyReport> {
  const engineOf = (role: 'planner' | 'actor'): CompletionSource => ('complete' in engines ? engines : engines[role]);
  const problems = heldOutProblems(opts);
  const limits = resolveLimits({ ...opts.limits, plannerMaxNewTokens: opts.maxNewTokens, actorMaxNewTokens: opts.maxNewTokens });
  const samples = Math.max(1, opts.samplesPerProblem ?? 1);
  // Sample j > 0 of a problem has its own seed stream; sample 0 keeps the one a single sample always had.
  const play = (problem: ArithProblem, index: number, sampling?: { temperature: number; topP: number }, sample = 0) => {
    const seed = sample === 0 ? episodeSeed(opts.seed, 'eval', index) : episodeSeed(opts.seed, `eval-s${sample}`, index);
    const deps: EpisodeDeps = {
      generate: async (role, prompt, meta): Promise<GenerateOutput> => {
        const params: SamplingParams = sampling
          ? { maxNewTokens: meta.maxNewTokens, temperature: sampling.temperature, topP: sampling.topP, stop: meta.stop, seed: generationSeed(seed, role, meta) }
          : { maxNewTokens: meta.maxNewTokens, temperature: 0, topP: 1, stop: meta.stop };
        const c = await engineOf(role).complete(prompt, params);
        return { text: c.text, finishReason: c.finishReason };
      },
      calc: async (expression) => calc(expression),
    };
    return runPlanActEpisode(problem, deps, { task: arithTask, episodeId: `eval-${index}`, ...limits }).then((r) => {
      opts.onEpisode?.();
      return r;
    });
  };
  const [greedy, sampled] = await Promise.all([
    Promise.all(problems.map((p, i) => play(p, i))),
    opts.sampled ? Promise.all(problems.map((p, i) => Promise.all(Array.from({ length: samples }, (_, j) => play(p, i, opts.sampled, j))))) : Promise.resolve(undefined),
  ]);
  const failures: Record<string, number> = {};
  for (const e of greedy) if (e.failure) failures[e.failure.code] = (failures[e.failure.code] ?? 0) + 1;
  const first = greedy[0];
  const correct = (e: EpisodeResult): boolean => e.reward > 0;
  return {
    greedy: accuracyOf(greedy.filter(correct).length, greedy.length),
    ...(sampled ? { sampled: samples === 1 ? accuracyOf(sampled.filter((s) => correct(s[0]!)).length, sampled.length) : clusteredAccuracy(sampled.map((s) => s.filter(correct).length), samples) } : {}),
    ...(sampled && samples > 1 ? { passAtK: passAtK(sampled.map((s) => s.filter(correct).length), samples) } : {}),
    tools: toolUse(greedy),
    ...(opts.part === 'test' ? { perProblem: greedy.map((e) => (correct(e) ? '1' : '0')).join('') } : {}),
    failures,
    example: first ? `${problems[0]!.expression} = ${problems[0]!.answer}: ${JSON.stringify(first.plannerTranscript.slice(0, 300))}` : '',
  };
}


/**
 * Tool use of greedy episodes: acts that called the calculator, and accuracy split by whether every
 * act did; episodes with no act (a plan that failed or answered at once) are in neither.
 */
function toolUse(episodes: readonly EpisodeResult[]): ToolUse {
  const acts = episodes.flatMap((e) => e.turns.flatMap((t) => t.acts));
  const withActs = episodes.filter((e) => e.turns.some((t) => t.acts.length > 0));
  const allTool = withActs.filter((e) => e.turns.every((t) => t.acts.every((a) => a.toolCalls > 0)));
  const others = withActs.filter((e) => !allTool.includes(e));
  return {
    acts: acts.length,
    actToolRate: acts.length === 0 ? 0 : acts.filter((a) => a.toolCalls > 0).length / acts.length,
    everyActUsedTool: accuracyOf(allTool.filter((e) => e.reward > 0).length, allTool.length),
    someActWithoutTool: accuracyOf(others.filter((e) => e.reward > 0).length, others.length),
  };
}
