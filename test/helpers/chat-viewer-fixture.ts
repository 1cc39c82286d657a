/**
 * A chat run as the viewer reads it (task.chat, Qwen3's real tokenizer and template, thinking on):
 * episodes played by the real driver (playChatEpisode) against a scripted engine that returns chosen
 * ids, kept token-in/token-out by advanceKeptEpisode, stored as chatTurn stores them, turned into a
 * sample set by the real writeChatSamples activity, and recorded as trainGrpo records an update.
 *
 * Episode 0: a system and a user message; a thinking turn with a calc call, its tool result; a
 * thinking turn with a malformed call (bad JSON), the environment's user message about it; a thinking
 * turn with the answer. Qwen3's full render drops the first two turns' thinking (they precede the
 * last user message): thinking-rewrite mismatches on model ids, trained as generated.
 * Episode 1: one turn whose text holds `<|im_start|>` inside the answer: vLLM's qwen3 parser drops it,
 * so the full render's text differs there (a `text` mismatch) and those model ids are masked out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { formatHermesToolCalls, loadChatModel, type ChatModel, type ChatMessage } from '../../src/chat';
import { advanceKeptEpisode, type KeptEpisode } from '../../src/chat/kept-episode';
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import type { ChatSpec } from '../../src/contracts/chat-episode';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import { resolveTokenizerDir } from '../../src/model/tokenizer-dir';
import { putJson, type BlobStore } from '../../src/store/blob-store';
import { names } from '../../src/store/run-names';
import { CALC_TOOL_NAME, calc, chatProblemMessages, playChatEpisode, problemFromExpression } from '../../src/tasks/arith';
import { chatConversationOptions, createChatActivities } from '../../activities/chat-episodes';
import type { EngineCache } from '../../activities/engine-cache';

export const CHAT_RUN = 'viewer-chat-run';
export const CHAT_STEP = 41;
export const CHAT_SPEC: ChatSpec = { tokenizer: 'qwen3', enableThinking: true };
export const SYSTEM_PROMPT = 'You are a careful calculator.';
export const EXPRESSION = '17+25';

const call = (args: Record<string, unknown>) => formatHermesToolCalls([{ name: CALC_TOOL_NAME, arguments: args }]);

/** The model turns of each episode, as the scripted engine writes them (the end-of-turn token appended). */
export const EPISODE_TURNS: readonly (readonly string[])[] = [
  [
    `<think>\nI will use the calculator.\n</think>\n\n${call({ expression: EXPRESSION })}`,
    '<think>\nLet me check it once more.\n</think>\n\n<tool_call>\n{"name": "calc", "arguments": {"expression": 17+25}}\n</tool_call>',
    '<think>\nThe calculator said 42.\n</think>\n\n42',
  ],
  ['<think>\nEasy.\n</think>\n\nThe answer is<|im_start|> 42'],
];

export const episodeIdOf = (i: number) => `${CHAT_RUN}/r1/chat-${i}`;

export interface ChatFixture {
  model: ChatModel;
  kept: KeptEpisode[];
  episodeRefs: Awaited<ReturnType<typeof putJson>>[];
  set: SampleSetRef;
}

/** Plays one scripted episode through the real driver; returns the kept episode. */
async function playScripted(model: ChatModel, turns: readonly string[]): Promise<{ kept: KeptEpisode; reward: number }> {
  const opts = chatConversationOptions(CHAT_SPEC);
  let kept: KeptEpisode | undefined;
  let t = 0;
  const first: ChatMessage[] = [{ role: 'system', content: SYSTEM_PROMPT }, ...chatProblemMessages(EXPRESSION)];
  const outcome = await playChatEpisode(
    problemFromExpression(EXPRESSION),
    {
      turn: async (env) => {
        const ids = model.tokenizer.encode(turns[t++]! + model.tokenizer.eosToken);
        const step = await advanceKeptEpisode(model, opts, kept, kept ? env : first, async (prompt) => ({
          completion: { text: '', promptTokenIds: [...prompt], tokenIds: ids, logprobs: ids.map((_, i) => -0.25 - 0.01 * i), entropy: ids.map(() => 0), finishReason: 'eos' },
          weightVersion: 4,
        }));
        kept = step.episode;
        return { parsed: step.parsed, finishReason: 'stop' };
      },
      calc: async (e) => calc(e),
    },
    { maxTurns: turns.length },
  );
  return { kept: kept!, reward: outcome.reward };
}

/**
 * Writes the chat run: its episodes' kept state, the sample set (writeChatSamples), the record of
 * global step CHAT_STEP (RL step 1: the run's state says RL started at CHAT_STEP - 1) and its
 * metrics line, whose timelines are the set's.
 */
export async function writeChatViewerFixture(store: BlobStore, runsDir: string): Promise<ChatFixture> {
  const model = loadChatModel(resolveTokenizerDir(CHAT_SPEC.tokenizer));
  const played = [];
  for (const turns of EPISODE_TURNS) played.push(await playScripted(model, turns));
  const episodeRefs = await Promise.all(played.map((p) => putJson(store, p.kept, 'chat-episode')));
  // writeChatSamples uses neither the engines nor an engine call.
  const activities = createChatActivities({ store, engines: {} as EngineCache, complete: () => Promise.reject(new Error('not used')) });
  const set = await activities.writeChatSamples({
    chat: CHAT_SPEC,
    episodes: played.map((p, i) => ({ episodeId: episodeIdOf(i), groupId: 'r1-p0', reward: p.reward, episode: episodeRefs[i]! })),
  });
  const meanReward = played.reduce((a, p) => a + p.reward, 0) / played.length;
  fs.mkdirSync(path.join(runsDir, CHAT_RUN), { recursive: true });
  const line = { kind: 'rl', step: 1, meanReward, accuracy: meanReward, loss: 0.05, seconds: { publish: 0, rollout: 1, train: 1 }, timelines: set.timelines };
  fs.writeFileSync(path.join(runsDir, CHAT_RUN, 'metrics.jsonl'), `${JSON.stringify(line)}\n`);
  await store.setName(names.runState(CHAT_RUN), await putJson(store, { losses: [], evals: [], rlStart: { name: 'x', ref: set.ref, step: CHAT_STEP - 1 } }, 'run-state'));
  const record: RolloutRecord = {
    version: 1,
    runId: CHAT_RUN,
    step: CHAT_STEP,
    policyVersion: 4,
    policyVersionKnown: true,
    objective: 'grpo',
    sets: [set],
    credit: played.map((p) => ({ advantage: p.reward - meanReward, status: 'trained' as const })),
    normAdvByStd: true,
    advantageNorm: 'episode',
  };
  await store.nameIfAbsent(names.rolloutRecord(CHAT_RUN, CHAT_STEP), await putJson(store, record, 'rollout-record'));
  return { model, kept: played.map((p) => p.kept), episodeRefs, set };
}
