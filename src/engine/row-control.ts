/**
 * What one request may ask of its own row in an engine batch, apart from the sampling parameters the
 * batch shares: its seed, a signal that cancels it, a callback per generated token (streaming), and a
 * constraint on what it may generate (constrained decoding, e.g. a forced tool call).
 */
export interface RowControl {
  seed?: number;
  /** Aborted: the row stops at the next decoding step and the engine's work on it ends. */
  signal?: AbortSignal;
  /** Called with every token as it is sampled, before the batch finishes (top: with params.topLogprobs). */
  onToken?: (tokenId: number, logprob: number, top?: ReadonlyArray<{ id: number; logprob: number }>) => void;
  constraint?: TokenConstraint;
}

/**
 * A regular language over output text, checked token by token: a token is allowed only if the output
 * with it can still become a word of the language, and the end-of-sequence token only once the output
 * is a whole word. Sampling is restricted to the allowed tokens; recorded logprobs stay the model's.
 */
export interface TokenConstraint {
  /** Can `text` still grow into an accepted output? */
  allowsPrefix(text: string): boolean;
  /** Is `text` an accepted output as it stands? */
  isComplete(text: string): boolean;
}

/** Thrown for a request whose signal aborted before or while it was generated. */
export class GenerationAbortedError extends Error {
  override readonly name = 'GenerationAbortedError';
  constructor() {
    super('generation aborted by its caller');
  }
}
