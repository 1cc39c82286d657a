/** What a generation leaves in the blob store, and how episodes name their generations (inference writes, samples read). */
import type { BlobRef } from '../domain/types';
import type { CallLabel, CallTokens } from '../timeline/episode-merge';

/**
 * What generate writes for every completion (see activities/inference.ts): the prompt's and the
 * output's ids, logprobs, messages and text the timeline merge reads (CallTokens), and the entropy.
 */
export interface CompletionTokens extends CallTokens {
  entropy: number[];
}

/** One generation of an episode: its role, turn, act and step (CallLabel), its token blob and weights version. */
export interface GenerationRef extends CallLabel {
  tokens: BlobRef;
  weightVersion: number;
}
