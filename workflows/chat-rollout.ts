/**
 * chatRollout: the standard single-agent rollout in chat mode (task.chat; docs/chat.md). Each problem
 * is a chat episode played by the pure driver (src/tasks/arith playChatEpisode): every model turn a
 * chatTurn activity on the policy's inference queue, which keeps the conversation's exact ids in the
 * blob store and hands back a reference; every calc tool call the calculator activity. The workflow
 * holds only references and parses. One sample per episode: the kept ids, the model mask, the engine's
 * logprobs (writeChatSamples, which counts the full-render check's mismatches in the step's metrics).
 */
import { isCancellation, log } from '@temporalio/workflow';
import type { BlobRef } from '../src/domain/types';
import type { ChatSpec } from '../src/contracts/chat-episode';
import type { SingleAgentRolloutInput } from '../src/contracts/rollout-inputs';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';
import { chatProblemMessages, playChatEpisode } from '../src/tasks/arith/chat-episode';
import { problemFromExpression } from '../src/tasks/arith/problem';
import { chatProxies } from './activity-proxies';
import { workflowNow } from './clock';
import { mean } from './web-ui-format';
import { episodeCalls } from './episode-calls';
import { meteredCalc } from './plan-act-episode';
import { rolloutProblems } from './rollout-episodes';
import { emptyToolMetrics } from './tool-metrics';
import { rolloutSummary } from './rollout-summary';

/** task.chat as activities take it (its tokenizer filled in from model.tokenizer when the config was parsed). */
export function chatSpecOf(cfg: SingleAgentRolloutInput['config']): ChatSpec {
  const chat = cfg.task.chat;
  if (chat?.tokenizer === undefined) throw new Error('chatRollout needs task.chat with model.tokenizer');
  return { tokenizer: chat.tokenizer, enableThinking: chat.enableThinking };
}

export async function chatRollout(input: SingleAgentRolloutInput): Promise<RolloutSummary> {
  const { config: cfg } = input;
  const started = workflowNow();
  const chat = chatSpecOf(cfg);
  const { chatTurn, writeChatSamples } = chatProxies(cfg.timeouts, input.policy.inferenceQueue);
  const calls = episodeCalls(cfg.timeouts, false);
  const toolMetrics = emptyToolMetrics();
  const batch = input.batch ?? 0;
  const problems = rolloutProblems(cfg, input.rolloutId, batch);
  let generations = 0;

  const episodes = await Promise.all(
    problems.map(async (p) => {
      const problem = problemFromExpression(p.expression);
      const episodeId = `${input.runId}/r${input.rolloutId}/chat-${batch > 0 ? `b${batch}-` : ''}${p.index}`;
      const t0 = workflowNow();
      let kept: BlobRef | undefined;
      const outcome = await playChatEpisode(
        problem,
        {
          turn: async (env) => {
            generations++;
            const r = await chatTurn({
              chat,
              ...(kept ? { episode: kept } : {}),
              env: kept ? env : chatProblemMessages(problem.expression),
              weights: input.policy.weights,
              ...(input.policy.remote ? { remote: input.policy.remote } : {}),
              params: { maxNewTokens: cfg.rl.maxNewTokens, temperature: cfg.rl.temperature, topP: cfg.rl.topP, stop: [] },
            });
            kept = r.episode;
            return { parsed: r.parsed, finishReason: r.finishReason };
          },
          calc: async (expression) => {
            try {
              return await meteredCalc(calls.calc, expression, toolMetrics);
            } catch (err) {
              if (isCancellation(err)) throw err;
              return { error: (err as Error).message };
            }
          },
        },
        { maxTurns: cfg.rollout.maxTurns },
      );
      return { p, episodeId, outcome, kept: kept!, ms: workflowNow() - t0 };
    }),
  );

  const set = await writeChatSamples({
    chat,
    episodes: episodes.map((e) => ({ episodeId: e.episodeId, ...(e.p.groupId !== undefined ? { groupId: e.p.groupId } : {}), reward: e.outcome.reward, episode: e.kept })),
  });
  const failureCodes: string[] = [];
  const rows: EpisodeRow[] = episodes.map((e) => {
    const failure = e.outcome.failure;
    if (failure) failureCodes.push(`chat-${failure}`);
    for (let i = 0; i < e.outcome.malformedToolCalls; i++) failureCodes.push('chat-malformed-tool-call');
    return { episodeId: e.episodeId, ...(e.p.groupId !== undefined ? { groupId: e.p.groupId } : {}), expression: e.p.expression, reward: e.outcome.reward, answer: e.outcome.answer, ...(failure ? { failure: `chat-${failure}` } : {}) };
  });
  const summary = rolloutSummary({
    rolloutId: input.rolloutId,
    mode: 'single',
    rows,
    answered: episodes.filter((e) => e.outcome.answer !== null).length,
    failureCodes,
    samples: { single: set },
    durationMs: workflowNow() - started,
    metrics: { generations, tools: toolMetrics, meanEpisodeMs: Math.round(mean(episodes.map((e) => e.ms))) },
  });
  log.info('chat rollout', { rolloutId: input.rolloutId, meanReward: summary.meanReward, mismatches: set.timelines?.chat });
  return summary;
}
