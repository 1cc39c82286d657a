/** Chat episodes' activity payloads (task.chat, docs/chat.md): the kept conversation travels by reference. */
import type { ChatMessage, ParsedTurn } from '../chat';
import type { BlobRef, FinishReason, RemoteEngineRef, SamplingParams } from '../domain/types';
import type { WeightsInfo } from './weights';

/** task.chat once parsed: its tokenizer is model.tokenizer's. */
export interface ChatSpec {
  tokenizer: string;
  enableThinking: boolean;
}

export interface ChatTurnInput {
  chat: ChatSpec;
  /** The kept episode so far (src/chat KeptEpisode); absent: `env` opens the conversation. */
  episode?: BlobRef;
  /** The environment's messages since the last model turn (the problem's, on the first turn). */
  env: ChatMessage[];
  weights: WeightsInfo;
  /** Generate on this OpenAI-compatible server from the kept ids, instead of the embedded engine. */
  remote?: RemoteEngineRef;
  params: SamplingParams;
}

export interface ChatTurnResult {
  /** The kept episode with this turn, stored under its content's hash (a retried attempt stores its own and is never read). */
  episode: BlobRef;
  parsed: Pick<ParsedTurn, 'content' | 'toolCalls' | 'malformed'>;
  finishReason: FinishReason;
  promptTokens: number;
  responseTokens: number;
  weightVersion: number;
}

export interface ChatEpisodeSamplesInput {
  chat: ChatSpec;
  episodes: Array<{ episodeId: string; groupId?: string; reward: number; episode: BlobRef }>;
}

export interface EvaluateChatEpisodesInput {
  chat: ChatSpec;
  weights: WeightsInfo;
  seed: number;
  problems: number;
  difficulty: import('../config/schema').RunConfig['task']['difficulty'];
  scheme: 'subproblem' | 'expression';
  part: 'validation' | 'test';
  maxTurns: number;
  maxNewTokens: number;
  sampled?: { temperature: number; topP: number };
  samplesPerProblem?: number;
}
