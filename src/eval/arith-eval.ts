/**
 * Held-out evaluation of a policy on the arithmetic Plan/Act task, three ways:
 *  - planner: each oracle planner turn, given the oracle context so far (teacher forcing), must be
 *    reproduced exactly;
 *  - actor: each oracle act, run through the actor loop with the real calculator, must return the
 *    right value;
 *  - episode: the policy plays both roles end to end and must answer correctly.
 * Generation is greedy, so the numbers are reproducible for a given set of weights.
 */
import type { RunConfig } from '../config/schema';
import type { Completion, SamplingParams } from '../domain/types';
import { runAct, runPlanActEpisode, resolveLimits, stripEos, type EpisodeDeps, type EpisodeResult, type GenerateOutput } from '../planact';
import { arithActorPrompt, arithTask, calc, drawProblems, oraclePlan, oracleSftExamples, type ArithProblem, type SplitScheme } from '../tasks/arith';
import type { EvalReport } from './report';
import { renderEpisode } from './render-episode';

/** The part of an engine evaluation needs: one prompt in, one completion out (batched behind). */
export interface CompletionSource {
  complete(prompt: string, params: SamplingParams): Promise<Completion>;
}

export interface ArithEvalOptions {
  seed: number;
  problems: number;
  difficulty: RunConfig['task']['difficulty'];
  /** task.split (absent: expression); subproblem: distinct validation problems. */
  scheme?: SplitScheme;
  rollout: Pick<RunConfig['rollout'], 'maxTurns' | 'maxActsPerTurn' | 'maxToolCallsPerAct'>;
  maxNewTokens: number;
  onEpisode?: () => void;
}

export async function evaluateArithPolicy(engine: CompletionSource, opts: ArithEvalOptions): Promise<EvalReport> {
  // A seed stream of its own, so evaluation problems do not follow the training problems' sequence.
  const scheme = opts.scheme ?? 'expression';
  const problems = drawProblems({ seed: opts.seed ^ 0x5eed_e7a1, count: opts.problems, scheme, part: 'validation', difficulty: opts.difficulty, distinct: scheme === 'subproblem' });
  const limits = resolveLimits({ ...opts.rollout, plannerMaxNewTokens: opts.maxNewTokens, actorMaxNewTokens: opts.maxNewTokens });
  const deps: EpisodeDeps = {
    generate: async (_role, prompt, meta): Promise<GenerateOutput> => {
      const c = await engine.complete(prompt, { maxNewTokens: meta.maxNewTokens, temperature: 0, topP: 1, stop: meta.stop });
      return { text: c.text, finishReason: c.finishReason };
    },
    calc: async (expression) => calc(expression),
  };

  const [planner, actor, episodes] = await Promise.all([
    Promise.all(problems.map((p) => plannerTurnsCorrect(deps, p, limits.plannerMaxNewTokens))),
    Promise.all(problems.map((p) => actsCorrect(deps, p, limits))),
    Promise.all(
      problems.map(async (p, i): Promise<EpisodeResult> => {
        const r = await runPlanActEpisode(p, deps, { task: arithTask, episodeId: `eval-${i}`, ...limits });
        opts.onEpisode?.();
        return r;
      }),
    ),
  ]);
  const ratio = (pairs: Array<[number, number]>) => {
    const [hit, total] = pairs.reduce(([h, t], [a, b]) => [h + a, t + b], [0, 0]);
    return total === 0 ? 0 : hit / total;
  };
  return {
    problems: problems.length,
    plannerAccuracy: ratio(planner),
    actorAccuracy: ratio(actor),
    episodeAccuracy: episodes.filter((e) => e.reward > 0).length / Math.max(1, episodes.length),
    examples: episodes.slice(0, 2).map((e, i) => renderEpisode(problems[i]!, e)),
  };
}

/** [correct, total] over the planner turns of one problem's oracle conversation. */
async function plannerTurnsCorrect(deps: EpisodeDeps, problem: ArithProblem, maxNewTokens: number): Promise<[number, number]> {
  const planner = oracleSftExamples(problem).find((e) => e.role === 'planner')!;
  const checks: Array<Promise<boolean>> = [];
  let context = '';
  for (const segment of planner.segments) {
    if (segment.train) {
      const prompt = context;
      const target = stripEos(segment.text);
      checks.push(
        deps
          .generate('planner', prompt, { episodeId: 'eval', turn: 0, step: 0, stop: [], maxNewTokens, messageStarts: [0] })
          .then((out) => out.finishReason === 'eos' && out.text === target),
      );
    }
    context += segment.text;
  }
  const results = await Promise.all(checks);
  return [results.filter(Boolean).length, results.length];
}

/** [correct, total] over the oracle acts of one problem, each run through the actor loop. */
async function actsCorrect(deps: EpisodeDeps, problem: ArithProblem, limits: ReturnType<typeof resolveLimits>): Promise<[number, number]> {
  const acts = oraclePlan(problem).flatMap((t, i) => (t.kind === 'acts' ? t.acts.map((a) => ({ ...a, turn: i + 1 })) : []));
  const results = await Promise.all(
    acts.map(async ({ id, expression, result, turn }) => {
      // Only id and expression go in: the record echoes its input, and must not echo the oracle's answer.
      const outcome = await runAct({ deps, limits, episodeId: 'eval', turn, prompt: arithActorPrompt(expression) }, { id, expression });
      return outcome.record.result === result;
    }),
  );
  return [results.filter(Boolean).length, results.length];
}
