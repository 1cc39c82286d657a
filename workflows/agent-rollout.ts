/**
 * agentRollout: a rollout whose episodes are played by an outside agent through the OpenAI-compatible
 * gateway. Each episode gets a fresh episode id; the agent (an activity on the tools queue: the
 * built-in openai-client agent against a given gateway, or, for rollout.kind: agent, the configured
 * command against the tools worker's gateway on the step's weights) solves its problem while the
 * gateway records its calls; the
 * workflow scores the answer, and the recorded timelines of the episodes are merged into samples
 * (the problem's episodes form its GRPO group), ready for a training step.
 * An agent that fails or times out ends its episode with reward 0; the rollout goes on.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, workflowInfo } from '@temporalio/workflow';
import type { AgentEpisodeResult } from '../activities/agents';
import { agentProxies } from './activity-proxies';
import { rolloutSummary } from './rollout-summary';
import { problemFromExpression } from '../src/tasks/arith/problem';
import { agentAnswerReward } from '../src/tasks/arith/chat-episode';
import { rolloutProblems } from './rollout-episodes';
import { workflowNow } from './clock';
import type { AgentRolloutInput } from '../src/contracts/rollout-inputs';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';

export async function agentRollout(input: AgentRolloutInput): Promise<RolloutSummary> {
  const cfg = input.config;
  const started = workflowNow();
  const self = workflowInfo().workflowId;
  // An input naming neither fails the workflow at once (a TypeError would retry its task forever).
  if (!input.agent && !input.gateway) throw ApplicationFailure.nonRetryable('agentRollout needs `gateway` (a served policy) or `agent` (a command and weights)', 'BadInputError');
  const { runAgentEpisode, runAgentCommand, writeAgentSamples } = agentProxies(cfg.timeouts, input.agentQueue, input.agent?.timeoutSec);
  const weightVersion = input.agent ? input.agent.weights.version : input.gateway!.weightVersion;

  // Chat mode (task.chat; refused for agents before, so no recorded history has it): the agent renders
  // its requests with the switches the run's chat episodes use (src/chat's enable_thinking), and its
  // answer is read as a chat episode's final turn; the recording proxy keeps its conversations'
  // ids token-in/token-out with the run's tokenizer (Qwen3's history rewrites then split nothing).
  const chatKwargs = cfg.task.chat
    ? { chatTemplateKwargs: { enable_thinking: cfg.task.chat.enableThinking }, ...(cfg.task.chat.tokenizer !== undefined ? { chatTokenizer: cfg.task.chat.tokenizer } : {}) }
    : {};

  const problems = rolloutProblems(cfg, input.rolloutId);
  const played = await Promise.all(
    problems.map(async (p) => {
      const episodeId = `${self}/e${p.index}`;
      let result: AgentEpisodeResult | undefined;
      let failure: string | undefined;
      const episode = {
        episodeId,
        expression: p.expression,
        maxCalls: cfg.rollout.maxToolCallsPerAct,
        temperature: cfg.rl.temperature,
        // Only when set: the inputs of runs at top_p 1 stay as they were recorded.
        ...(cfg.rl.topP !== 1 ? { topP: cfg.rl.topP } : {}),
        maxTokens: cfg.rl.maxNewTokens,
        seed: cfg.seed * 100_003 + input.rolloutId * 1_009 + p.index,
      };
      try {
        // The input chooses (never the clock or a patch): histories of gateway rollouts replay as they were.
        result = input.agent
          ? await runAgentCommand({ ...episode, command: input.agent.command, timeoutSec: input.agent.timeoutSec, weights: input.agent.weights, maxSeq: cfg.model.maxSeq, ...(input.agent.remote ? { remote: input.agent.remote } : {}), ...chatKwargs })
          : await runAgentEpisode({ ...episode, baseUrl: input.gateway!.baseUrl, model: input.gateway!.model });
      } catch (err) {
        if (isCancellation(err) || !(err instanceof ActivityFailure)) throw err;
        failure = 'agent-failed';
      }
      const answer = result?.answer ?? null;
      const reward = agentAnswerReward(problemFromExpression(p.expression), answer, cfg.task.chat !== undefined);
      return { p, episodeId, result, answer, reward, failure };
    }),
  );
  const finished = played.filter((e) => e.result !== undefined);
  const set = await writeAgentSamples({
    // On a synced server each episode carries the version it was served (absent: the rollout's).
    episodes: finished.map((e) => ({ recordedAs: e.result!.recordedAs, episodeId: e.episodeId, groupId: e.p.groupId, reward: e.reward, ...(e.result!.weightVersion !== undefined ? { weightVersion: e.result!.weightVersion } : {}) })),
    timeline: cfg.timeline,
    weightVersion,
  });
  const rows: EpisodeRow[] = played.map((e) => ({
    episodeId: e.episodeId,
    groupId: e.p.groupId,
    expression: e.p.expression,
    reward: e.reward,
    answer: e.answer,
    ...(e.failure ? { failure: e.failure } : e.answer === null ? { failure: 'no-answer' } : {}),
  }));
  return rolloutSummary({
    rolloutId: input.rolloutId,
    mode: 'single',
    rows,
    answered: played.filter((e) => e.answer !== null).length,
    failureCodes: rows.flatMap((r) => (r.failure ? [r.failure] : [])),
    samples: { single: set },
    durationMs: workflowNow() - started,
    metrics: { generations: finished.reduce((n, e) => n + e.result!.requests, 0) },
  });
}
