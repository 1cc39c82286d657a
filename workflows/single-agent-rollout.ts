/**
 * singleAgentRollout: the standard rollout (trainingRun's rollout.kind: standard, and what a Plan/Act
 * job falls back to when its joint rollout cannot happen: partner missing or lost, session too slow). The job's own policy gets the whole
 * problem ("Compute: 17+25+8\n"), may call the calculator like an actor, and answers with a number
 * or an "ANSWER: <n>" line; reward 1 when correct. Samples carry role "single".
 *
 * Episodes are short (a few generations each), so they run inline rather than as children.
 */
import { log } from '@temporalio/workflow';
import type { GenerateResult } from '../activities/inference';
import { runAct } from '../src/planact/actor-loop';
import type { EpisodeDeps } from '../src/planact/episode-types';
import { EOS_TEXT } from '../src/planact/protocol';
import { arithPlannerPrompt } from '../src/tasks/arith/formats';
import { problemFromExpression } from '../src/tasks/arith/problem';
import { arithReward } from '../src/tasks/arith/reward';
import { emptyToolMetrics } from './tool-metrics';
import { episodeLimits, rolloutProblems } from './rollout-episodes';
import { mean, preview } from './web-ui-format';
import { workflowNow } from './clock';
import { meteredCalc } from './plan-act-episode';
import { planActProxies } from './activity-proxies';
import { episodeCalls } from './episode-calls';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';
import type { SingleAgentRolloutInput } from '../src/contracts/rollout-inputs';
import { rolloutSummary } from './rollout-summary';

const ANSWER_LINE = /(?:^|\n)\s*ANSWER:\s*(-?\d{1,15})\s*$/;

/** The single agent's answer: the act answer the actor loop parsed, else a final ANSWER line. */
export function singleAgentAnswer(result: string | undefined, transcript: string, prompt: string): string | null {
  if (result !== undefined) return result;
  const written = transcript.slice(prompt.length).split(EOS_TEXT).join('');
  return ANSWER_LINE.exec(written)?.[1] ?? null;
}

export async function singleAgentRollout(input: SingleAgentRolloutInput): Promise<RolloutSummary> {
  const { config: cfg } = input;
  const started = workflowNow();
  // Absent in configs recorded before rollout.batchRequests: batched.
  const calls = episodeCalls(cfg.timeouts, cfg.rollout.batchRequests ?? true);
  const { samples } = planActProxies(cfg.timeouts);
  const limits = episodeLimits(cfg);
  const toolMetrics = emptyToolMetrics();

  const deps: EpisodeDeps<GenerateResult> = {
    generate: (_role, prompt, meta) =>
      calls.generate({
        weights: input.policy.weights,
        role: 'single',
        prompt,
        params: { maxNewTokens: meta.maxNewTokens, temperature: cfg.rl.temperature, topP: cfg.rl.topP, stop: meta.stop },
        messageStarts: meta.messageStarts,
        ...(input.policy.remote ? { remote: input.policy.remote } : {}),
      }, input.policy.inferenceQueue),
    calc: (expression) => meteredCalc(calls.calc, expression, toolMetrics),
  };

  const batch = input.batch ?? 0;
  const problems = rolloutProblems(cfg, input.rolloutId, batch);
  const episodes = await Promise.all(
    problems.map(async (p) => {
      const problem = problemFromExpression(p.expression);
      const episodeId = `${input.runId}/r${input.rolloutId}/single-${batch > 0 ? `b${batch}-` : ''}${p.index}`;
      const prompt = arithPlannerPrompt(problem.expression);
      const t0 = workflowNow();
      const outcome = await runAct({ deps, limits, episodeId, turn: 1, prompt }, { id: '1', expression: problem.expression });
      const answer = singleAgentAnswer(outcome.record.result, outcome.record.transcript, prompt);
      const reward = arithReward(problem, answer);
      return { p, episodeId, answer, reward, outcome, ms: workflowNow() - t0 };
    }),
  );

  const sets = await samples.writeEpisodeSamples({
    episodes: episodes.map((e) => ({
      episodeId: e.episodeId,
      groupId: e.p.groupId,
      reward: e.reward,
      generations: e.outcome.generations.map((g) => ({ role: 'single' as const, turn: 1, step: g.step, tokens: g.output.tokens, weightVersion: g.output.weightVersion })),
    })),
    timeline: cfg.timeline,
  });

  const failureCodes: string[] = [];
  const rows: EpisodeRow[] = episodes.map((e) => {
    // An ANSWER line is a valid single-agent ending even though the actor parser rejected it.
    const failure = e.answer === null ? e.outcome.record.failure : undefined;
    if (failure) failureCodes.push(failure.code);
    return { episodeId: e.episodeId, ...(e.p.groupId !== undefined ? { groupId: e.p.groupId } : {}), expression: e.p.expression, reward: e.reward, answer: e.answer, ...(failure ? { failure: failure.code } : {}) };
  });
  const summary = rolloutSummary({
    rolloutId: input.rolloutId,
    mode: 'single',
    rows,
    answered: episodes.filter((e) => e.answer !== null).length,
    failureCodes,
    samples: sets,
    durationMs: workflowNow() - started,
    metrics: {
      generations: episodes.reduce((n, e) => n + e.outcome.generations.length, 0),
      tools: toolMetrics,
      meanEpisodeMs: Math.round(mean(episodes.map((e) => e.ms))),
    },
  });
  log.info('single-agent fallback rollout', { rolloutId: input.rolloutId, reason: preview(input.reason, 120), meanReward: summary.meanReward });
  return summary;
}
