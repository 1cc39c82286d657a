/**
 * Chat episodes' inference-queue activities (task.chat, docs/chat.md). chatTurn is one model turn of
 * an episode token-in/token-out: it loads the kept conversation by reference, appends the
 * environment's messages as a rendered delta, generates from the kept ids (the embedded engine, or
 * the remote server as ids), appends the returned ids as they are, and stores the new state under its
 * content's hash, returning the reference and the turn's parse. A retried attempt stores its own
 * state, which nothing reads. writeChatSamples turns kept episodes into training samples (the full
 * render check's mismatches counted); the evaluations play the same episodes in-process.
 */
import { Context } from '@temporalio/activity';
import type { AgentRole, Completion, RemoteEngineRef, SamplingParams } from '../src/domain/types';
import type { WeightsInfo } from '../src/contracts/weights';
import type { Prompt } from '../src/engine/types';
import type { Sample } from '../src/domain/types';
import { loadChatModel, MISMATCH_KINDS, type ChatModel, type ConversationOptions } from '../src/chat';
import { advanceKeptEpisode, keptSample, storedCheck, type KeptEpisode } from '../src/chat/kept-episode';
import type { ChatEpisodeSamplesInput, ChatSpec, ChatTurnInput, ChatTurnResult, EvaluateChatEpisodesInput } from '../src/contracts/chat-episode';
import { writeSampleSet, type SampleSetRef } from '../src/contracts/sample-set';
import type { EpisodeAccuracyReport } from '../src/eval/episode-accuracy';
import { heldOutProblems } from '../src/eval/episode-accuracy';
import { evaluateChatAccuracy } from '../src/eval/chat-accuracy';
import type { EvalReport } from '../src/eval/report';
import { resolveTokenizerDir } from '../src/model/tokenizer-dir';
import { CHAT_TOOLS, drawProblems, type ArithDifficulty, type SplitScheme } from '../src/tasks/arith';
import { getJson, putJson, type BlobStore } from '../src/store/blob-store';
import type { TimelineCounts } from '../src/timeline/counts';
import type { EngineCache } from './engine-cache';

/** activities/inference.ts's completion of a prompt by the embedded engine or the input's remote server. */
type Complete = (input: { weights: WeightsInfo; role: AgentRole; params: SamplingParams; remote?: RemoteEngineRef }, prompt: Prompt) => Promise<{ completion: Completion; weightVersion: number }>;

/** The conversation options of task.chat: the calc tool, the template's thinking switch, vLLM's qwen3 reasoning parser when thinking. */
export function chatConversationOptions(chat: Pick<ChatSpec, 'enableThinking'>): ConversationOptions {
  return { tools: CHAT_TOOLS, enableThinking: chat.enableThinking, ...(chat.enableThinking ? { reasoningParser: 'qwen3' as const } : {}) };
}

/** task.chat's model (template and tokenizer), loaded once per worker. */
export function chatModelOf(chat: Pick<ChatSpec, 'tokenizer'>): ChatModel {
  return loadChatModel(resolveTokenizerDir(chat.tokenizer));
}

/** The held-out chat evaluation of the SFT curve (evaluatePolicy): arith-eval's validation problems, greedy. */
export interface ChatPolicyEvalInput {
  chat: ChatSpec;
  seed: number;
  problems: number;
  difficulty: ArithDifficulty;
  scheme: SplitScheme;
  maxTurns: number;
  maxNewTokens: number;
  onEpisode?: () => void;
}

export function createChatActivities({ store, engines, complete }: { store: BlobStore; engines: EngineCache; complete: Complete }) {
  return {
    async chatTurn(input: ChatTurnInput): Promise<ChatTurnResult> {
      const model = chatModelOf(input.chat);
      const kept = input.episode ? await getJson<KeptEpisode>(store, input.episode) : undefined;
      let weightVersion = input.weights.version;
      const ctx = Context.current();
      const timer = setInterval(() => ctx.heartbeat({ chatTurn: true }), 1000);
      try {
        const step = await advanceKeptEpisode(model, chatConversationOptions(input.chat), kept, input.env, async (ids) => {
          const done = await complete({ weights: input.weights, role: 'single', params: input.params, ...(input.remote ? { remote: input.remote } : {}) }, ids);
          weightVersion = done.weightVersion;
          return done;
        });
        const { content, toolCalls, malformed } = step.parsed;
        return {
          episode: await putJson(store, step.episode, 'chat-episode'),
          parsed: { content, toolCalls, malformed },
          finishReason: step.finishReason,
          promptTokens: step.promptTokens,
          responseTokens: step.responseTokens,
          weightVersion,
        };
      } finally {
        clearInterval(timer);
      }
    },

    /**
     * One sample per episode: its kept ids from the first model id on, the model mask (environment ids
     * 0, model ids masked out only where the full-render check cannot align them), the engine's
     * logprobs. The check's mismatches by kind go into the set's counts (the step's metrics); the
     * check itself is stored, and the sample names it and the kept episode (metadata.chat: the
     * viewer shows the conversation from them).
     */
    async writeChatSamples(input: ChatEpisodeSamplesInput): Promise<SampleSetRef> {
      const model = chatModelOf(input.chat);
      const opts = chatConversationOptions(input.chat);
      const samples: Sample[] = [];
      const counts: TimelineCounts = { captured: 0, merged: 0, tokensBefore: 0, tokensAfter: 0, driftRepaired: 0, chat: { ...Object.fromEntries(MISMATCH_KINDS.map((k) => [k, 0])), unalignedModelIds: 0 } };
      for (const e of input.episodes) {
        const kept = await getJson<KeptEpisode>(store, e.episode);
        const s = keptSample(model, opts, kept);
        const versions = [...new Set(kept.weightVersions)].sort((a, b) => a - b);
        const check = await putJson(store, storedCheck(s.check), 'chat-check');
        samples.push({
          promptTokens: s.promptTokens,
          responseTokens: s.responseTokens,
          logprobs: s.logprobs,
          lossMask: s.lossMask,
          reward: e.reward,
          metadata: { role: 'single', episodeId: e.episodeId, turn: 1, weightVersion: versions[0] ?? 0, ...(versions.length > 1 ? { weightVersions: versions } : {}), ...(e.groupId !== undefined ? { groupId: e.groupId } : {}),
            chat: { tokenizer: input.chat.tokenizer, enableThinking: input.chat.enableThinking, episode: e.episode, check },
          },
        });
        counts.captured += kept.weightVersions.length;
        counts.merged += 1;
        counts.tokensBefore += kept.conversation.ids.length;
        counts.tokensAfter += kept.conversation.ids.length;
        for (const k of MISMATCH_KINDS) counts.chat![k]! += s.check.counts[k];
        counts.chat!.unalignedModelIds! += s.check.unalignedModelIds;
      }
      return writeSampleSet(store, 'single', samples, { counts, snaps: [] });
    },

    /** evaluateEpisodes for a chat policy: held-out problems of the RL distribution, greedy and sampled. */
    async evaluateChatEpisodes(input: EvaluateChatEpisodesInput): Promise<EpisodeAccuracyReport> {
      const problems = heldOutProblems({ seed: input.seed, problems: input.problems, difficulty: input.difficulty, scheme: input.scheme, part: input.part });
      let done = 0;
      const ctx = Context.current();
      const timer = setInterval(() => ctx.heartbeat({ episodesDone: done }), 1000);
      try {
        return await engines.lease(input.weights, (engine) =>
          evaluateChatAccuracy(engine, chatModelOf(input.chat), chatConversationOptions(input.chat), problems, {
            seed: input.seed,
            maxTurns: input.maxTurns,
            maxNewTokens: input.maxNewTokens,
            ...(input.sampled ? { sampled: input.sampled } : {}),
            ...(input.samplesPerProblem ? { samplesPerProblem: input.samplesPerProblem } : {}),
            part: input.part,
            onEpisode: () => (done += 1),
          }),
        );
      } finally {
        clearInterval(timer);
      }
    },
  };
}

/** evaluatePolicy of a chat run (the SFT curve): greedy chat episodes on arith-eval's validation problems. */
export async function evaluateChatPolicy(engine: Parameters<typeof evaluateChatAccuracy>[0], input: ChatPolicyEvalInput): Promise<EvalReport> {
  const problems = drawProblems({ seed: input.seed ^ 0x5eed_e7a1, count: input.problems, scheme: input.scheme, part: 'validation', difficulty: input.difficulty, distinct: input.scheme === 'subproblem' });
  const report = await evaluateChatAccuracy(engine, chatModelOf(input.chat), chatConversationOptions(input.chat), problems, { seed: input.seed, maxTurns: input.maxTurns, maxNewTokens: input.maxNewTokens, ...(input.onEpisode ? { onEpisode: input.onEpisode } : {}) });
  return { problems: problems.length, episodeAccuracy: report.greedy.accuracy, examples: [report.example] };
}

