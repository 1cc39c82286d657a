/**
 * A remote policy behind any OpenAI-compatible server (vLLM, SGLang, this project's gateway), used by
 * the generate activity when a policy names one. Prompts are already rendered by the protocol, so it
 * calls /v1/completions with the raw text. Token ids and logprobs follow vLLM's conventions where the
 * server returns them (`return_token_ids`, `logprobs: 0`, `stop_reason`); otherwise the ids come from
 * the tokenizer the caller gives, and logprobs are 0 (marked: `logprobsFromServer` false). Servers do
 * not report the entropy of each step, so entropy is 0.
 */
import type { Completion, FinishReason, SamplingParams } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';

export interface RemoteEngineOptions {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Encodes text whose ids the server does not return. */
  tokenizer?: TextTokenizer;
  timeoutMs?: number;
}

/** An HTTP answer that retrying cannot fix (4xx): the request itself is wrong. */
export class RemoteEngineRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'RemoteEngineRequestError';
  }
}

interface CompletionChoice {
  text: string;
  finish_reason: 'stop' | 'length' | string;
  stop_reason?: string | number | null;
  logprobs?: { token_logprobs?: Array<number | null> } | null;
  prompt_token_ids?: number[];
  token_ids?: number[];
}

export class RemoteOpenAIEngine {
  constructor(private readonly o: RemoteEngineOptions) {}

  async complete(prompt: string, params: SamplingParams): Promise<Completion & { logprobsFromServer: boolean }> {
    const res = await fetch(`${this.o.baseUrl.replace(/\/$/, '')}/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.o.apiKey ?? 'none'}` },
      signal: AbortSignal.timeout(this.o.timeoutMs ?? 600_000),
      body: JSON.stringify({
        model: this.o.model,
        prompt,
        max_tokens: params.maxNewTokens,
        temperature: params.temperature,
        top_p: params.topP,
        ...(params.stop.length > 0 ? { stop: params.stop } : {}),
        ...(params.seed !== undefined ? { seed: params.seed } : {}),
        logprobs: 0,
        return_token_ids: true,
      }),
    });
    const body = (await res.json().catch(() => undefined)) as { choices?: CompletionChoice[]; error?: { message?: string } } | undefined;
    if (!res.ok) {
      const message = `remote engine ${this.o.baseUrl} answered ${res.status}: ${body?.error?.message ?? res.statusText}`;
      if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new RemoteEngineRequestError(res.status, message);
      throw new Error(message);
    }
    const c = body?.choices?.[0];
    if (!c) throw new Error(`remote engine ${this.o.baseUrl} returned no choice`);
    const encode = (text: string): number[] => {
      if (!this.o.tokenizer) throw new RemoteEngineRequestError(0, `remote engine ${this.o.baseUrl} returned no token ids and no tokenizer was given to encode them`);
      return this.o.tokenizer.encode(text);
    };
    const tokenIds = c.token_ids ?? encode(c.text);
    const served = c.logprobs?.token_logprobs;
    const logprobsFromServer = served !== undefined && served.length === tokenIds.length && served.every((x) => typeof x === 'number');
    return {
      text: c.text,
      promptTokenIds: c.prompt_token_ids ?? encode(prompt),
      tokenIds,
      logprobs: logprobsFromServer ? (served as number[]) : tokenIds.map(() => 0),
      logprobsFromServer,
      entropy: tokenIds.map(() => 0),
      finishReason: finishReason(c),
    };
  }
}

/** OpenAI's 'stop' covers both the end-of-sequence token and a stop string; vLLM's stop_reason tells them apart. */
function finishReason(c: CompletionChoice): FinishReason {
  if (c.finish_reason === 'length') return 'length';
  return typeof c.stop_reason === 'string' ? 'stop' : 'eos';
}
