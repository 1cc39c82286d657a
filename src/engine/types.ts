import type { Completion, SamplingParams } from '../domain/types';
import type { RowControl } from './row-control';

/** A prompt: text the engine encodes with its tokenizer, or the token ids themselves (token-in/token-out chat episodes). */
export type Prompt = string | readonly number[];

/** A policy that turns prompts into completions with token ids, logprobs and entropy. */
export interface PolicyEngine {
  /** Weight version the engine currently serves. */
  readonly weightVersion: number;
  /**
   * seeds[i], when given, seeds row i's sampling on its own, so a request's tokens do not depend on
   * which other requests share its batch; otherwise params.seed seeds the batch (row i: mixSeed(seed, i)).
   * rows[i] carries row i's own controls (cancellation, streaming, constraint; see RowControl).
   */
  generate(prompts: readonly Prompt[], params: SamplingParams, options?: { seeds?: ReadonlyArray<number | undefined>; rows?: ReadonlyArray<RowControl | undefined> }): Promise<Completion[]>;
  /** Teacher-forced logprobs of tokenIds after promptIds (softmax(logits / temperature)), where the engine can score. */
  scoreTokens?(promptIds: number[], tokenIds: number[], temperature?: number): Promise<number[]>;
  /** Frees native resources (sessions, device memory); the engine is unusable afterwards. */
  release?(): Promise<void>;
}
