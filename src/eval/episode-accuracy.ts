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
import { arithTask, calc, generateProblems, type ArithDifficulty, type ArithProblem } from '../tasks/arith';

export interface EpisodeAccuracyOptions {
  /** Chooses the held-out problems (its own stream, apart from training problems). */
  seed: number;
  problems: number;
  difficulty: ArithDifficulty;
  limits: Pick<EpisodeLimits, 'maxTurns' | 'maxActsPerTurn' | 'maxToolCallsPerAct'>;
  maxNewTokens: number;
  /** Also run every problem once with sampling at this temperature / top-p. */
  sampled?: { temperature: number; topP: number };
  onEpisode?: () => void;
}

/** An accuracy with its standard error (binomial, sqrt(p(1-p)/n)) so differences can be judged. */
export interface Accuracy {
  correct: number;
  total: number;
  accuracy: number;
  stderr: number;
}

export interface EpisodeAccuracyReport {
  greedy: Accuracy;
  sampled?: Accuracy;
  /** Failure codes of the greedy episodes (e.g. plan-bad-act: 3), for a person reading the result. */
  failures: Record<string, number>;
  /** One rendered greedy episode, to see what the policy does. */
  example: string;
}

export function accuracyOf(correct: number, total: number): Accuracy {
  const p = total === 0 ? 0 : correct / total;
  return { correct, total, accuracy: p, stderr: total === 0 ? 0 : Math.sqrt((p * (1 - p)) / total) };
}

/** The held-out problems an evaluation of this distribution uses (a seed stream apart from training's). */
function heldOutProblems(seed: number, count: number, difficulty: ArithDifficulty): ArithProblem[] {
  return generateProblems({ seed: seed ^ 0x0e7a_1bed, count, split: 'heldout', difficulty });
}

export async function evaluateEpisodeAccuracy(engine: CompletionSource, opts: EpisodeAccuracyOptions): Promise<EpisodeAccuracyReport> {
  const problems = heldOutProblems(opts.seed, opts.problems, opts.difficulty);
  const limits = resolveLimits({ ...opts.limits, plannerMaxNewTokens: opts.maxNewTokens, actorMaxNewTokens: opts.maxNewTokens });
  const play = (problem: ArithProblem, index: number, sampling?: { temperature: number; topP: number }) => {
    const seed = episodeSeed(opts.seed, 'eval', index);
    const deps: EpisodeDeps = {
      generate: async (role, prompt, meta): Promise<GenerateOutput> => {
        const params: SamplingParams = sampling
          ? { maxNewTokens: meta.maxNewTokens, temperature: sampling.temperature, topP: sampling.topP, stop: meta.stop, seed: generationSeed(seed, role, meta) }
          : { maxNewTokens: meta.maxNewTokens, temperature: 0, topP: 1, stop: meta.stop };
        const c = await engine.complete(prompt, params);
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
    opts.sampled ? Promise.all(problems.map((p, i) => play(p, i, opts.sampled))) : Promise.resolve(undefined),
  ]);
  const failures: Record<string, number> = {};
  for (const e of greedy) if (e.failure) failures[e.failure.code] = (failures[e.failure.code] ?? 0) + 1;
  const first = greedy[0];
  return {
    greedy: accuracyOf(greedy.filter((e) => e.reward > 0).length, greedy.length),
    ...(sampled ? { sampled: accuracyOf(sampled.filter((e) => e.reward > 0).length, sampled.length) } : {}),
    failures,
    example: first ? `${problems[0]!.expression} = ${problems[0]!.answer}: ${JSON.stringify(first.plannerTranscript.slice(0, 300))}` : '',
  };
}
