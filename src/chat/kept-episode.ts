/**
 * A chat episode kept token-in/token-out between turns (task.chat, docs/chat.md): the conversation's
 * TokenConversation state plus, per id, the engine's logprob (0 where the environment wrote it) and
 * each model turn's weight version. chatTurn activities store it in the blob store, keyed by content,
 * and hand the next one its reference; evaluation keeps it in memory. advanceKeptEpisode is the one
 * step both run: the environment's messages appended as a delta, the model's ids generated from the
 * kept ids and appended as they came.
 */
import type { Completion } from '../domain/types';
import { checkConversation, type ConversationCheck, type Mismatch, type MismatchKind } from './conversation-check';
import type { ParsedTurn } from './hermes';
import type { ChatMessage } from './messages';
import { TokenConversation, type ChatModel, type ConversationOptions, type TokenConversationSnapshot } from './token-conversation';

export interface KeptEpisode {
  conversation: TokenConversationSnapshot;
  /** One per id: the engine's logprob of a model id, 0 for prompt and environment ids. */
  logprobs: number[];
  /** Per model turn, the weights that generated it. */
  weightVersions: number[];
}

export interface KeptTurn {
  episode: KeptEpisode;
  parsed: ParsedTurn;
  finishReason: Completion['finishReason'];
  promptTokens: number;
  responseTokens: number;
}

/** The engine call of one turn: a completion of these prompt ids, and the weights that made it. */
export type GenerateFromIds = (promptIds: readonly number[]) => Promise<{ completion: Completion; weightVersion: number }>;

/**
 * One turn: `episode` undefined starts the conversation with `env` as its first messages. Throws
 * when the completion's prompt is not the kept ids (an engine that re-encoded them).
 */
export async function advanceKeptEpisode(model: ChatModel, opts: ConversationOptions, episode: KeptEpisode | undefined, env: readonly ChatMessage[], generate: GenerateFromIds): Promise<KeptTurn> {
  const conv = episode ? TokenConversation.restore(model, episode.conversation, opts) : new TokenConversation(model, [], opts);
  const logprobs = episode ? [...episode.logprobs] : [];
  conv.addMessages(...env);
  const prompt = conv.nextPrompt();
  while (logprobs.length < prompt.length) logprobs.push(0);
  const { completion, weightVersion } = await generate(prompt);
  if (completion.promptTokenIds.length !== prompt.length || completion.promptTokenIds.some((id, i) => id !== prompt[i])) {
    throw new Error('the engine generated from other prompt ids than the kept conversation');
  }
  const parsed = conv.addModelTurn(completion.tokenIds, completion.finishReason === 'length' ? 'length' : 'stop');
  logprobs.push(...completion.logprobs);
  // A turn cut by the length limit is closed with the end-of-turn id as environment (logprob 0).
  while (logprobs.length < conv.ids.length) logprobs.push(0);
  return {
    episode: { conversation: conv.snapshot(), logprobs, weightVersions: [...(episode?.weightVersions ?? []), weightVersion] },
    parsed,
    finishReason: completion.finishReason,
    promptTokens: prompt.length,
    responseTokens: completion.tokenIds.length,
  };
}

/** What the trainer gets of a kept episode: its ids from the first model id on, the check's loss mask, the engine's logprobs. */
export interface KeptSample {
  promptTokens: number[];
  responseTokens: number[];
  logprobs: number[];
  lossMask: number[];
  check: ConversationCheck;
}

export function keptSample(model: ChatModel, opts: ConversationOptions, episode: KeptEpisode): KeptSample {
  const conv = TokenConversation.restore(model, episode.conversation, opts);
  const check = checkConversation(conv);
  const cut = conv.modelMask.indexOf(1);
  const at = cut < 0 ? conv.ids.length : cut;
  return {
    promptTokens: conv.ids.slice(0, at),
    responseTokens: conv.ids.slice(at),
    logprobs: episode.logprobs.slice(at),
    lossMask: check.lossMask.slice(at),
    check,
  };
}

/**
 * What a sample keeps of its full-render check (writeChatSamples stores it beside the sample, by
 * reference): every mismatch at its ids, the counts, the ids masked out. Not the full render's ids
 * nor the mask, which the kept episode and the sample already hold.
 */
export interface StoredCheck {
  mismatches: Mismatch[];
  counts: Record<MismatchKind, number>;
  unalignedModelIds: number;
}

export function storedCheck(check: ConversationCheck): StoredCheck {
  return { mismatches: check.mismatches, counts: check.counts, unalignedModelIds: check.unalignedModelIds };
}
