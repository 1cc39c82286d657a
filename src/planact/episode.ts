/**
 * The Plan/Act episode driver, shared by the Temporal workflow (deps = activity proxies) and
 * in-process evaluation and benchmarks (deps = engines directly).
 *
 * Loop: the planner speaks -> its output is parsed into concurrent acts or an ANSWER -> every act
 * runs on the actor at once (Promise.all) with its own tool calls -> RESULT lines are appended to
 * the planner context -> repeat until ANSWER or maxTurns.
 *
 * Deterministic given deterministic deps: no clock, no randomness, and records are ordered by act,
 * not by which act finished first (callers measure time around their deps). Malformed model output
 * ends the episode with reward 0 and a recorded failure; the returned promise rejects only when a
 * dependency's generate rejects (infrastructure failure, which Temporal retries) or a task hook throws.
 */
import { runAct } from './actor-loop';
import { DEFAULT_EPISODE_LIMITS, type EpisodeDeps, type EpisodeFailure, type EpisodeLimits, type EpisodeOptions, type EpisodeResult, type GenerateOutput, type GenerationRecord, type TurnRecord } from './episode-types';
import { parsePlan, PlanParseError, type ParsedPlan } from './plan-parser';
import { closeTurn, formatResults } from './protocol';

export function resolveLimits(opts: Partial<EpisodeLimits>): EpisodeLimits {
  const limits: EpisodeLimits = {
    maxTurns: opts.maxTurns ?? DEFAULT_EPISODE_LIMITS.maxTurns,
    maxActsPerTurn: opts.maxActsPerTurn ?? DEFAULT_EPISODE_LIMITS.maxActsPerTurn,
    maxToolCallsPerAct: opts.maxToolCallsPerAct ?? DEFAULT_EPISODE_LIMITS.maxToolCallsPerAct,
    plannerMaxNewTokens: opts.plannerMaxNewTokens ?? DEFAULT_EPISODE_LIMITS.plannerMaxNewTokens,
    actorMaxNewTokens: opts.actorMaxNewTokens ?? DEFAULT_EPISODE_LIMITS.actorMaxNewTokens,
  };
  for (const [key, value] of Object.entries(limits)) {
    const min = key === 'maxToolCallsPerAct' ? 0 : 1;
    if (!Number.isInteger(value) || value < min) throw new RangeError(`episode limit ${key} must be an integer >= ${min}, got ${value}`);
  }
  return limits;
}

export async function runPlanActEpisode<P, G extends GenerateOutput = GenerateOutput>(
  problem: P,
  deps: EpisodeDeps<G>,
  opts: EpisodeOptions<P>,
): Promise<EpisodeResult<G>> {
  const { task } = opts;
  const limits = resolveLimits(opts);
  const episodeId = opts.episodeId ?? 'episode';
  const turns: TurnRecord[] = [];
  const generations: Array<GenerationRecord<G>> = [];
  const usedIds = new Set<string>();
  let maxConcurrentActs = 0;
  let context = task.plannerPrompt(problem);
  const messageStarts = [0];
  const append = (text: string): void => {
    messageStarts.push(context.length);
    context += text;
  };

  const end = (outcome: { finalAnswer: string; reward: number } | { failure: EpisodeFailure }): EpisodeResult<G> => {
    const acts = turns.flatMap((t) => t.acts);
    return {
      episodeId,
      status: 'failure' in outcome ? 'failed' : 'answered',
      finalAnswer: 'failure' in outcome ? null : outcome.finalAnswer,
      reward: 'failure' in outcome ? 0 : outcome.reward,
      ...('failure' in outcome ? { failure: outcome.failure } : {}),
      turns,
      plannerTranscript: context,
      generations,
      metrics: {
        turns: turns.length,
        acts: acts.length,
        toolCalls: acts.reduce((n, a) => n + a.toolCalls, 0),
        toolFailures: acts.reduce((n, a) => n + a.toolFailures, 0),
        generations: generations.length,
        maxConcurrentActs,
      },
    };
  };

  for (let turn = 1; turn <= limits.maxTurns; turn++) {
    const output = await deps.generate('planner', context, {
      episodeId,
      turn,
      step: 0,
      stop: [],
      maxNewTokens: limits.plannerMaxNewTokens,
      messageStarts: messageStarts.slice(),
    });
    generations.push({ role: 'planner', turn, step: 0, prompt: context, completion: output.text, finishReason: output.finishReason, output });
    const record: TurnRecord = { turn, planText: output.text, finishReason: output.finishReason, kind: 'invalid', acts: [], resultsText: '' };
    turns.push(record);
    append(closeTurn(output.text));
    if (output.finishReason === 'length') {
      return end({ failure: { code: 'planner-length', message: `planner output hit the ${limits.plannerMaxNewTokens}-token limit`, turn } });
    }

    let plan: ParsedPlan;
    try {
      plan = parsePlan(output.text, { maxActs: limits.maxActsPerTurn, usedIds });
    } catch (err) {
      if (err instanceof PlanParseError) return end({ failure: { code: `plan-${err.code}`, message: err.message, turn } });
      throw err;
    }
    if (plan.kind === 'answer') {
      record.kind = 'answer';
      return end({ finalAnswer: plan.value, reward: task.reward(problem, plan.value) });
    }

    record.kind = 'acts';
    for (const act of plan.acts) usedIds.add(act.id);
    maxConcurrentActs = Math.max(maxConcurrentActs, plan.acts.length);
    const outcomes = await Promise.all(
      plan.acts.map((act) => runAct({ deps, limits, episodeId, turn, prompt: task.actorPrompt(problem, act.expression) }, act)),
    );
    for (const o of outcomes) {
      record.acts.push(o.record);
      generations.push(...o.generations);
    }
    const failed = record.acts.find((a) => a.failure !== undefined);
    if (failed?.failure) return end({ failure: failed.failure });
    record.resultsText = formatResults(record.acts.map((a) => ({ id: a.id, value: a.result ?? '' })));
    append(record.resultsText);
  }
  return end({ failure: { code: 'max-turns', message: `no ANSWER within ${limits.maxTurns} turns`, turn: limits.maxTurns } });
}
