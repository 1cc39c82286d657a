/**
 * The recording proxy's view of an OpenAI-compatible engine's request and response bodies (vLLM's
 * conventions, checked against vLLM 0.32): what a recorded request asks for on top of the client's
 * own body, how the response is cut back to what the client asked for, and the engine's own prompt
 * ids, output ids and logprobs read out of a response or accumulated from a stream.
 *
 *  - chat: `return_token_ids: true` gives the response's top-level `prompt_token_ids` (streamed: in
 *    each choice's first chunk) and each choice's `token_ids` (streamed: the delta's ids in every
 *    chunk); `logprobs: true` gives `choices[i].logprobs.content[j].logprob`, one per id.
 *  - completions: `return_token_ids: true` gives each choice's `prompt_token_ids` (streamed: in its
 *    first chunk) and `token_ids`; `logprobs: 0` (or the client's own number) gives
 *    `choices[i].logprobs.token_logprobs`, one per id.
 *
 * vLLM answers a field nobody asked for with null (streamed chunks too), so a field the proxy added
 * is set back to null, never deleted: the client reads the body it would have got. Pure data: no I/O.
 */
import { GatewayError } from './errors';

export type Endpoint = 'chat' | 'completion';
export type JsonObject = Record<string, unknown>;

/** What the client itself asked for; the proxy asks for both. */
export interface Asked {
  tokenIds: boolean;
  logprobs: boolean;
}

/** One choice of a response as the engine produced it: the ids it saw and the ids and logprobs it sampled. */
export interface EngineCall {
  /** The choice's index in the response. */
  index: number;
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  /** Why the choice ended (`stop`, `length`, ...), as the engine said. */
  finishReason?: string | null;
  /** Chat: the reply as the engine returned it (streamed: its deltas put together), what a later request echoes back. */
  message?: JsonObject;
}

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The request as the proxy sends it when it records: the client's body plus `return_token_ids` and
 * logprobs. Fields that change what the engine's ids or logprobs mean are refused with a 400 naming
 * them: `echo` (vLLM then returns the prompt's text and logprobs in the output), `logprob_token_ids`
 * (logprobs of chosen ids, not of the sampled ones) and `use_beam_search` (beams' scores).
 */
export function recordingRequest(kind: Endpoint, body: JsonObject): { body: JsonObject; asked: Asked } {
  for (const field of ['echo', 'use_beam_search'] as const) {
    if (body[field] === true) throw refused(field, `${field}: true`);
  }
  const ids = body.logprob_token_ids;
  if (Array.isArray(ids) && ids.length > 0) throw refused('logprob_token_ids', 'logprob_token_ids');
  const asked: Asked = {
    tokenIds: body.return_token_ids === true,
    logprobs: kind === 'chat' ? body.logprobs === true : typeof body.logprobs === 'number',
  };
  const logprobs = kind === 'chat' ? true : asked.logprobs ? body.logprobs : 0;
  return { body: { ...body, return_token_ids: true, logprobs }, asked };
}

function refused(param: string, what: string): GatewayError {
  return new GatewayError(
    400,
    `${what} is not supported on a recorded request (one with x-episode-id): it changes which ids and logprobs the engine returns. Send it without x-episode-id to have it forwarded unrecorded`,
    'invalid_request_error',
    param,
  );
}

/** Sets the fields the client did not ask for back to null, in a response body or a streamed chunk (in place). */
export function stripUnasked(kind: Endpoint, body: JsonObject, asked: Asked): JsonObject {
  const nullify = (o: JsonObject, key: string) => {
    if (key in o) o[key] = null;
  };
  if (!asked.tokenIds) nullify(body, 'prompt_token_ids');
  for (const c of choicesOf(body)) {
    if (!asked.tokenIds) {
      nullify(c, 'token_ids');
      if (kind === 'completion') nullify(c, 'prompt_token_ids');
    }
    if (!asked.logprobs) nullify(c, 'logprobs');
  }
  return body;
}

/**
 * A streamed chat chunk that, once stripped, says nothing: vLLM sends one per token when ids or
 * logprobs were asked for even where its tool or reasoning parser holds the text back (an empty
 * delta), and would not have sent it to this client. Dropped.
 */
export function isEmptyChunk(chunk: JsonObject): boolean {
  const choices = choicesOf(chunk);
  if (choices.length === 0 || (chunk.usage !== undefined && chunk.usage !== null)) return false;
  return choices.every(
    (c) => isObject(c.delta) && Object.keys(c.delta).length === 0 && (c.finish_reason ?? null) === null && (c.logprobs ?? null) === null && (c.token_ids ?? null) === null,
  );
}

function choicesOf(body: JsonObject): JsonObject[] {
  return Array.isArray(body.choices) ? body.choices.filter(isObject) : [];
}

/** The upstream left out something recording needs: a 502 naming it; nothing of the call is recorded. */
export function missing(what: string, why = ''): GatewayError {
  return new GatewayError(
    502,
    `the upstream's response has no ${what}${why}; recording an episode needs the engine's own token ids and logprobs (the proxy asks for them with return_token_ids and logprobs, as vLLM serves them), so this call was not recorded`,
    'server_error',
    null,
    'upstream_missing_tokens',
  );
}

function ids(v: unknown): number[] | undefined {
  return Array.isArray(v) && v.every((x) => Number.isInteger(x) && (x as number) >= 0) ? (v as number[]) : undefined;
}

function numbers(v: unknown): number[] | undefined {
  return Array.isArray(v) && v.every((x) => typeof x === 'number') ? (v as number[]) : undefined;
}

/** One logprob per entry of chat logprobs' `content`. */
function chatLogprobs(logprobs: unknown): number[] | undefined {
  if (!isObject(logprobs) || !Array.isArray(logprobs.content)) return undefined;
  return numbers(logprobs.content.map((e: unknown) => (isObject(e) ? e.logprob : undefined)));
}

function completionLogprobs(logprobs: unknown): number[] | undefined {
  return isObject(logprobs) ? numbers(logprobs.token_logprobs) : undefined;
}

function checked(call: EngineCall, where: string): EngineCall {
  if (call.tokenIds.length !== call.logprobs.length) {
    throw missing(`logprob for every token id in ${where}`, ` (${call.tokenIds.length} ids, ${call.logprobs.length} logprobs)`);
  }
  return call;
}

/** The engine's calls in a complete (not streamed) response, one per choice. */
export function engineCalls(kind: Endpoint, body: JsonObject): EngineCall[] {
  const choices = Array.isArray(body.choices) ? body.choices : [];
  if (choices.length === 0) throw missing('choices');
  const shared = kind === 'chat' ? ids(body.prompt_token_ids) : undefined;
  if (kind === 'chat' && !shared) throw missing('prompt_token_ids');
  const calls = choices.map((c: unknown, k) => {
    const where = `choices[${k}]`;
    if (!isObject(c)) throw missing(where);
    const index = typeof c.index === 'number' ? c.index : k;
    const promptTokenIds = shared ?? ids(c.prompt_token_ids);
    if (!promptTokenIds) throw missing(`${where}.prompt_token_ids`);
    const tokenIds = ids(c.token_ids);
    if (!tokenIds) throw missing(`${where}.token_ids`);
    const logprobs = kind === 'chat' ? chatLogprobs(c.logprobs) : completionLogprobs(c.logprobs);
    if (!logprobs) throw missing(`${where}.logprobs`);
    const reply = kind === 'chat' && isObject(c.message) ? { message: c.message } : {};
    return checked({ index, promptTokenIds: [...promptTokenIds], tokenIds: [...tokenIds], logprobs: [...logprobs], finishReason: typeof c.finish_reason === 'string' ? c.finish_reason : null, ...reply }, where);
  });
  const counted = isObject(body.usage) && typeof body.usage.completion_tokens === 'number' ? body.usage.completion_tokens : undefined;
  const total = calls.reduce((n, c) => n + c.tokenIds.length, 0);
  if (counted !== undefined && counted !== total) throw missing('token ids for every generated token', ` (usage counts ${counted}, the choices carry ${total})`);
  return calls;
}

/**
 * A stream's calls, accumulated chunk by chunk: each choice's prompt ids from the chunk that carries
 * them, its output ids and logprobs appended in order. `calls()` at the end checks that every chunk
 * that moved a choice on carried its ids and logprobs, and that the usage, when streamed, counts the
 * same number of ids.
 */
export class StreamedCalls {
  private readonly byIndex = new Map<number, { prompt?: number[]; tokenIds: number[]; logprobs: number[]; finishReason: string | null; reply: StreamedReply }>();
  private chatPrompt: number[] | undefined;
  private completionTokens: number | undefined;
  private problem: string | undefined;
  /** The response id of the first chunk that had one. */
  id: string | undefined;

  constructor(private readonly kind: Endpoint) {}

  add(chunk: JsonObject): void {
    if (this.id === undefined && typeof chunk.id === 'string') this.id = chunk.id;
    const prompt = ids(chunk.prompt_token_ids);
    if (this.kind === 'chat' && prompt && !this.chatPrompt) this.chatPrompt = [...prompt];
    // The closing usage chunk (no choices) counts all choices' tokens; continuous usage in a choice's chunks counts that choice's.
    if (choicesOf(chunk).length === 0 && isObject(chunk.usage) && typeof chunk.usage.completion_tokens === 'number') this.completionTokens = chunk.usage.completion_tokens;
    for (const c of choicesOf(chunk)) {
      if (typeof c.index !== 'number') continue;
      let acc = this.byIndex.get(c.index);
      if (!acc) this.byIndex.set(c.index, (acc = { tokenIds: [], logprobs: [], finishReason: null, reply: new StreamedReply() }));
      if (typeof c.finish_reason === 'string') acc.finishReason = c.finish_reason;
      if (this.kind === 'chat' && isObject(c.delta)) acc.reply.add(c.delta);
      const own = ids(c.prompt_token_ids);
      if (this.kind === 'completion' && own && !acc.prompt) acc.prompt = [...own];
      const tokenIds = ids(c.token_ids);
      const logprobs = this.kind === 'chat' ? chatLogprobs(c.logprobs) : completionLogprobs(c.logprobs);
      const moved = (isObject(c.delta) && typeof c.delta.content === 'string' && c.delta.content !== '') || (typeof c.text === 'string' && c.text !== '') || tokenIds !== undefined || logprobs !== undefined;
      if (!moved) continue;
      if (!tokenIds) this.problem ??= `choices[${c.index}].token_ids in a streamed chunk`;
      else if (!logprobs) this.problem ??= `choices[${c.index}].logprobs in a streamed chunk`;
      else {
        acc.tokenIds.push(...tokenIds);
        acc.logprobs.push(...logprobs);
      }
    }
  }

  calls(): EngineCall[] {
    if (this.problem) throw missing(this.problem);
    if (this.byIndex.size === 0) throw missing('choices in the stream');
    const calls = [...this.byIndex.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, acc]) => {
        const promptTokenIds = this.kind === 'chat' ? this.chatPrompt : acc.prompt;
        if (!promptTokenIds) throw missing(this.kind === 'chat' ? 'prompt_token_ids in the stream' : `choices[${index}].prompt_token_ids in the stream`);
        const reply = this.kind === 'chat' ? { message: acc.reply.message() } : {};
        return checked({ index, promptTokenIds, tokenIds: acc.tokenIds, logprobs: acc.logprobs, finishReason: acc.finishReason, ...reply }, `choices[${index}]`);
      });
    const total = calls.reduce((n, c) => n + c.tokenIds.length, 0);
    if (this.completionTokens !== undefined && this.completionTokens !== total) {
      throw missing('token ids for every generated token', ` (usage counts ${this.completionTokens}, the chunks carried ${total})`);
    }
    return calls;
  }
}

/**
 * A streamed chat reply put together from its deltas, as OpenAI clients do: the content's pieces
 * joined, each tool call (by its index) with its id, name and the pieces of its arguments joined.
 */
class StreamedReply {
  private content: string | null = null;
  private readonly calls = new Map<number, { id?: string; type?: string; name: string; arguments: string }>();

  add(delta: JsonObject): void {
    if (typeof delta.content === 'string') this.content = (this.content ?? '') + delta.content;
    if (!Array.isArray(delta.tool_calls)) return;
    for (const [k, t] of delta.tool_calls.entries()) {
      if (!isObject(t)) continue;
      const index = typeof t.index === 'number' ? t.index : k;
      let call = this.calls.get(index);
      if (!call) this.calls.set(index, (call = { name: '', arguments: '' }));
      if (typeof t.id === 'string') call.id = t.id;
      if (typeof t.type === 'string') call.type = t.type;
      const f = isObject(t.function) ? t.function : {};
      if (typeof f.name === 'string') call.name += f.name;
      if (typeof f.arguments === 'string') call.arguments += f.arguments;
    }
  }

  message(): JsonObject {
    const calls = [...this.calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => ({ id: c.id, type: c.type ?? 'function', function: { name: c.name, arguments: c.arguments } }));
    return { role: 'assistant', content: this.content, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
  }
}
