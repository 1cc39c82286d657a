import type { Completion, FinishReason, SamplingParams } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';
import { type SamplerScratch, finishReason, sampleToken, tokenLogprob, tokenStats, topLogprobs } from './sampling';

/** One prompt's generation state, independent of how rows are batched. */
export class GenerationRow {
  readonly tokenIds: number[] = [];
  readonly logprobs: number[] = [];
  readonly entropy: number[] = [];
  readonly topLogprobs: Array<Array<{ id: number; logprob: number }>> = [];
  finish: FinishReason | undefined;
  /** Prompt positions whose keys and values came from the prefix cache instead of prefill. */
  cachedPromptTokens = 0;

  constructor(
    readonly promptIds: number[],
    private readonly rand: () => number,
  ) {}

  /** Prompt plus generated tokens. */
  get length(): number {
    return this.promptIds.length + this.tokenIds.length;
  }

  get lastToken(): number {
    return this.tokenIds.length > 0 ? (this.tokenIds[this.tokenIds.length - 1] as number) : (this.promptIds[this.promptIds.length - 1] as number);
  }

  /** Ends the row before any generation (prompt already at the length limit, or nothing to generate). */
  finishEarly(reason: FinishReason): void {
    this.finish = reason;
  }

  /**
   * Samples the next token from logits[offset, offset+V) and records its logprob under the
   * distribution it was sampled from (softmax(logits / T), see tokenLogprob) and the entropy of
   * the raw (temperature 1) distribution.
   */
  accept(
    logits: Float32Array,
    offset: number,
    params: SamplingParams,
    tokenizer: TextTokenizer,
    maxSeq: number,
    scratch: SamplerScratch,
  ): number {
    const V = scratch.V;
    const token = sampleToken(logits, offset, V, params.temperature, params.topP, this.rand, scratch);
    const stats = tokenStats(logits, offset, V);
    this.tokenIds.push(token);
    this.logprobs.push(tokenLogprob(logits, offset, V, token, params.temperature));
    if (params.topLogprobs) this.topLogprobs.push(topLogprobs(logits, offset, V, params.temperature, params.topLogprobs));
    this.entropy.push(stats.entropy);
    const text = params.stop.length > 0 && token !== tokenizer.eosId ? tokenizer.decode(this.tokenIds) : undefined;
    this.finish = finishReason({
      token,
      eosId: tokenizer.eosId,
      generated: this.tokenIds.length,
      maxNewTokens: params.maxNewTokens,
      totalLength: this.length,
      maxSeq,
      stops: params.stop,
      ...(text !== undefined ? { text } : {}),
    });
    return token;
  }

  toCompletion(tokenizer: TextTokenizer): Completion {
    const ids = this.finish === 'eos' ? this.tokenIds.slice(0, -1) : this.tokenIds;
    return {
      // Whole decoded tokens, so text and tokenIds always agree (a stop string may be followed
      // by the rest of the token that completed it).
      text: tokenizer.decode(ids),
      promptTokenIds: this.promptIds.slice(),
      tokenIds: this.tokenIds.slice(),
      logprobs: this.logprobs.slice(),
      entropy: this.entropy.slice(),
      finishReason: this.finish ?? 'length',
      cachedPromptTokens: this.cachedPromptTokens,
      ...(this.topLogprobs.length > 0 ? { topLogprobs: this.topLogprobs.map((step) => step.slice()) } : {}),
    };
  }
}
