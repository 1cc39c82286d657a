import type { Completion, FinishReason, SamplingParams } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';
import { decodeWhole } from '../model/whole-characters';
import type { RowControl } from './row-control';
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
  /** The caller's signal ended the row early. */
  aborted = false;
  /** The output's text so far, kept only for a constraint. */
  private text = '';

  constructor(
    readonly promptIds: number[],
    private readonly rand: () => number,
    private readonly control: RowControl = {},
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
    const constraint = this.control.constraint;
    const token = constraint
      ? sampleToken(constrainedLogits(logits, offset, V, this.text, constraint, tokenizer, scratch), 0, V, params.temperature, params.topP, this.rand, scratch)
      : sampleToken(logits, offset, V, params.temperature, params.topP, this.rand, scratch);
    const stats = tokenStats(logits, offset, V);
    this.tokenIds.push(token);
    const logprob = tokenLogprob(logits, offset, V, token, params.temperature);
    this.logprobs.push(logprob);
    if (constraint) this.text = tokenizer.decode(this.tokenIds);
    if (params.topLogprobs) this.topLogprobs.push(topLogprobs(logits, offset, V, params.temperature, params.topLogprobs));
    this.entropy.push(stats.entropy);
    // Stop strings match whole characters only: half a character's U+FFFD is not text yet.
    const text = params.stop.length > 0 && token !== tokenizer.eosId ? decodeWhole(tokenizer, this.tokenIds) : undefined;
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
    this.control.onToken?.(token, logprob, params.topLogprobs ? this.topLogprobs[this.topLogprobs.length - 1] : undefined);
    if (this.finish === undefined && this.control.signal?.aborted) {
      this.aborted = true;
      this.finish = 'length';
    }
    // A constrained output that is whole and can grow no further ends here, as at end-of-sequence.
    if (this.finish === undefined && constraint && constraint.isComplete(this.text) && !canGrow(this.text, constraint, tokenizer)) this.finish = 'stop';
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

const tokenTexts = new WeakMap<TextTokenizer, string[]>();

/** Every id's text, decoded once per tokenizer. */
function textsOf(tokenizer: TextTokenizer, V: number): string[] {
  let texts = tokenTexts.get(tokenizer);
  if (!texts) {
    texts = Array.from({ length: V }, (_, id) => (id < tokenizer.vocabSize ? tokenizer.decode([id]) : ''));
    tokenTexts.set(tokenizer, texts);
  }
  return texts;
}

/**
 * The row's logits with every token the constraint forbids at -Infinity, in the scratch buffer (the
 * batch's logits stay as the model produced them, for the recorded logprob and entropy). When the
 * constraint allows nothing (it cannot happen for a language every prefix of which can grow), the
 * end-of-sequence token is left open so the row still ends.
 */
function constrainedLogits(logits: Float32Array, offset: number, V: number, text: string, constraint: NonNullable<RowControl['constraint']>, tokenizer: TextTokenizer, scratch: SamplerScratch): Float32Array {
  const out = scratch.masked;
  const texts = textsOf(tokenizer, V);
  let open = 0;
  for (let id = 0; id < V; id++) {
    const ok = id === tokenizer.eosId ? constraint.isComplete(text) : id !== tokenizer.padId && texts[id] !== '' && constraint.allowsPrefix(text + texts[id]);
    out[id] = ok ? (logits[offset + id] as number) : -Infinity;
    if (ok) open++;
  }
  if (open === 0) out[tokenizer.eosId] = 0;
  return out;
}

function canGrow(text: string, constraint: NonNullable<RowControl['constraint']>, tokenizer: TextTokenizer): boolean {
  const texts = tokenTexts.get(tokenizer) ?? [];
  return texts.some((t, id) => id !== tokenizer.eosId && id !== tokenizer.padId && t !== '' && constraint.allowsPrefix(text + t));
}
