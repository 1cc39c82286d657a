/**
 * A remote policy behind an OpenAI-compatible server (vLLM, SGLang, this project's gateway), used by
 * the generate activity when a policy names one. Token in, token out: the prompt goes as token ids
 * (`prompt: number[]`, encoded with the served model's own tokenizer), and the completion's ids and
 * logprobs are the server's, never re-encoded or filled in. Every sampling parameter is sent
 * explicitly and neutral where the trainer assumes it (top_k, min_p, penalties), so the server
 * samples the distribution whose logprobs are recorded; the server must report processed logprobs
 * (vLLM: `--logprobs-mode processed_logprobs`), which the caller cannot see and the docs require.
 *
 * Both servers' conventions are read: vLLM's `stop_reason`, `token_ids` and `include_stop_str_in_output`,
 * SGLang's `matched_stop` and `no_stop_trim`; vLLM's nested error body and SGLang's flat one.
 */
import type { Completion, FinishReason, SamplingParams } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';
import type { Prompt } from './types';

export interface RemoteEngineOptions {
  /** e.g. http://127.0.0.1:8000/v1 */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** The served model's tokenizer: encodes prompts, decodes the returned ids. */
  tokenizer: TextTokenizer;
  timeoutMs?: number;
}

/** Why a request cannot succeed by retrying it. */
export type RemoteRequestProblem = 'unknown-model' | 'context-overflow' | 'bad-request' | 'server-config';

/** An answer that retrying cannot fix: the request or the server's configuration is wrong. */
export class RemoteEngineRequestError extends Error {
  override name = 'RemoteEngineRequestError';
  constructor(
    readonly status: number,
    readonly problem: RemoteRequestProblem,
    message: string,
  ) {
    super(message);
  }
}

/** A failure worth retrying: the server aborted the request, is overloaded, or was unreachable. */
export class RemoteEngineUnavailableError extends Error {
  override name = 'RemoteEngineUnavailableError';
}

/** One choice of a /v1/completions answer, in the fields either server may use. */
export interface CompletionChoiceBody {
  text?: string;
  finish_reason?: string | null;
  /** vLLM: the stop string or stop token id that ended the choice; null for EOS or length. */
  stop_reason?: string | number | null;
  /** SGLang: the same, under this name. */
  matched_stop?: string | number | null;
  logprobs?: { token_logprobs?: Array<number | null> } | null;
  prompt_token_ids?: number[] | null;
  token_ids?: number[] | null;
}

/** The request body: vLLM's and SGLang's extensions side by side (each server ignores the other's). */
export function completionRequestBody(model: string, promptIds: number[], params: SamplingParams): Record<string, unknown> {
  return {
    model,
    prompt: promptIds,
    max_tokens: params.maxNewTokens,
    temperature: params.temperature,
    top_p: params.topP,
    // Neutral, explicitly: servers otherwise fill these from the model's generation config.
    top_k: -1,
    min_p: 0,
    repetition_penalty: 1,
    frequency_penalty: 0,
    presence_penalty: 0,
    ...(params.stop.length > 0 ? { stop: params.stop } : {}),
    ...(params.seed !== undefined ? { seed: params.seed } : {}),
    logprobs: 0,
    return_token_ids: true,
    // The stop string stays in the text, as the token ids keep it (vLLM; SGLang: no_stop_trim).
    include_stop_str_in_output: true,
    no_stop_trim: true,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
  };
}

/** The message of either server's error body (vLLM: { error: { message } }; SGLang: { message }; FastAPI: { detail }). */
export function errorMessage(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const b = body as { error?: unknown; message?: unknown; detail?: unknown };
  if (typeof b.error === 'object' && b.error !== null && typeof (b.error as { message?: unknown }).message === 'string') return (b.error as { message: string }).message;
  if (typeof b.error === 'string') return b.error;
  if (typeof b.message === 'string') return b.message;
  if (typeof b.detail === 'string') return b.detail;
  if (b.detail !== undefined) return JSON.stringify(b.detail);
  return undefined;
}

/** Sorts a failed answer into retryable and not, naming the problem. */
export function classifyError(status: number, message: string, where: string): Error {
  const text = `remote engine ${where} answered ${status}: ${message}`;
  if (status === 404 || /model .*does not exist|not found/i.test(message) && status < 500) return new RemoteEngineRequestError(status, 'unknown-model', text);
  if (/maximum context length|context length|too long|exceeds? the model/i.test(message) && status < 500) return new RemoteEngineRequestError(status, 'context-overflow', text);
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) return new RemoteEngineRequestError(status, 'bad-request', text);
  return new RemoteEngineUnavailableError(text);
}

/**
 * The completion of one choice. Never guesses: a server that returns no ids or no logprobs (or
 * logprobs of another length) is a configuration error naming the setting; `abort` is retryable.
 */
export function readChoice(c: CompletionChoiceBody, promptIds: number[], tokenizer: TextTokenizer, where: string): Completion {
  if (c.finish_reason === 'abort') throw new RemoteEngineUnavailableError(`remote engine ${where} aborted the request (finish_reason: abort)`);
  const ids = c.token_ids;
  if (!Array.isArray(ids)) {
    throw new RemoteEngineRequestError(0, 'server-config', `remote engine ${where} returned no token ids: use vLLM ≥ 0.10.2 (return_token_ids) or a server that returns the sampled ids`);
  }
  const served = c.logprobs?.token_logprobs;
  if (!Array.isArray(served) || served.length !== ids.length || !served.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    throw new RemoteEngineRequestError(0, 'server-config', `remote engine ${where} returned ${Array.isArray(served) ? `${served.length} logprobs for ${ids.length} tokens` : 'no logprobs'}: the server must report the sampled token's logprob (logprobs: 0)`);
  }
  if (Array.isArray(c.prompt_token_ids) && (c.prompt_token_ids.length !== promptIds.length || c.prompt_token_ids.some((id, i) => id !== promptIds[i]))) {
    throw new RemoteEngineRequestError(0, 'server-config', `remote engine ${where} read the prompt as other token ids than were sent (does it add a BOS token? the served tokenizer must add no special tokens)`);
  }
  const finish = finishReason(c, ids, tokenizer.eosId);
  return {
    // The text of the ids themselves (EOS left out), so text and ids agree as with the embedded engine.
    text: tokenizer.decode(finish === 'eos' ? ids.slice(0, -1) : ids),
    promptTokenIds: promptIds.slice(),
    tokenIds: ids.slice(),
    logprobs: served as number[],
    // Servers report no per-step entropy.
    entropy: ids.map(() => 0),
    finishReason: finish,
  };
}

/** OpenAI's 'stop' covers both EOS and a stop string; vLLM's stop_reason and SGLang's matched_stop tell them apart. */
export function finishReason(c: CompletionChoiceBody, ids: number[], eosId: number): FinishReason {
  if (c.finish_reason === 'length') return 'length';
  const matched = c.stop_reason ?? c.matched_stop;
  if (typeof matched === 'string') return 'stop';
  if (c.finish_reason === 'stop' && (matched === undefined || matched === null || matched === eosId) && ids.at(-1) === eosId) return 'eos';
  if (c.finish_reason === 'stop' && typeof matched === 'number') return 'stop';
  // Neither EOS nor a matched stop: the server ended it some other way (max context).
  return 'length';
}

export class RemoteOpenAIEngine {
  constructor(private readonly o: RemoteEngineOptions) {}

  private get where(): string {
    return this.o.baseUrl;
  }

  /** `model`: another served name than the client's (a LoRA adapter on its server). A prompt of ids is sent as it is. */
  async complete(prompt: Prompt, params: SamplingParams, signal?: AbortSignal, model?: string): Promise<Completion> {
    const promptIds = typeof prompt === 'string' ? this.o.tokenizer.encode(prompt) : [...prompt];
    const url = `${this.o.baseUrl.replace(/\/$/, '')}/completions`;
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${this.o.apiKey ?? 'none'}` },
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(this.o.timeoutMs ?? 600_000)]) : AbortSignal.timeout(this.o.timeoutMs ?? 600_000),
        body: JSON.stringify(completionRequestBody(model ?? this.o.model, promptIds, params)),
      });
    } catch (err) {
      throw new RemoteEngineUnavailableError(`remote engine ${this.where} unreachable: ${(err as Error).message}`);
    }
    const body = (await res.json().catch(() => undefined)) as { choices?: CompletionChoiceBody[] } | undefined;
    if (!res.ok) throw classifyError(res.status, errorMessage(body) ?? res.statusText, this.where);
    const c = body?.choices?.[0];
    if (!c) throw new RemoteEngineUnavailableError(`remote engine ${this.where} returned no choice`);
    return readChoice(c, promptIds, this.o.tokenizer, this.where);
  }
}
