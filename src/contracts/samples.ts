/** What a generation leaves in the blob store, and how episodes name their generations (inference writes, samples read). */
import type { AgentRole, BlobRef } from '../domain/types';
import type { PromptMessage } from '../timeline/capture';

/** What generate writes for every completion (see activities/inference.ts). */
export interface CompletionTokens {
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  entropy: number[];
  /** The prompt's messages (absent in blobs written before timeline capture). */
  messages?: PromptMessage[];
  /** The output's text as later contexts render it. */
  outputText?: string;
}

export interface GenerationRef {
  role: AgentRole;
  turn: number;
  actId?: string;
  /** Index of the call inside its act (tool rounds); with turn and actId it names the call. */
  step?: number;
  tokens: BlobRef;
  weightVersion: number;
}
