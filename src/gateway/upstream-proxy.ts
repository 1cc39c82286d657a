/**
 * The recording proxy: an OpenAI-compatible endpoint in front of another one (a real vLLM in
 * particular) that records an agent's calls as timelines, with the token ids and logprobs the
 * ENGINE returned — nothing is re-tokenized here — so agents on real models are captured the way
 * the embedded gateway (server.ts) captures them on the embedded policy.
 *
 * Routes: GET /health, /v1/models and /v1/models/{id} forwarded; POST /v1/chat/completions and
 * /v1/completions forwarded, plain or streamed. A request without `x-episode-id` is forwarded as it
 * came and its response returned as it came. One with it (checked like the gateway's, with
 * `x-agent-name` naming the agent) is sent with `return_token_ids` and logprobs added
 * (upstream-tokens.ts), recorded from the response, and answered with what the client did not ask
 * for set back to null, as the upstream answers when nobody asks: the client reads the response it
 * would have got. Streams are forwarded chunk by chunk as they arrive; the closing `[DONE]` waits
 * until the call is recorded (a failed recording is an error event in its place).
 *
 * With `tokenInTokenOut` (the served model's tokenizer directory, upstream-tito.ts) a recorded chat
 * conversation is kept as the ids the server saw and returned, and a request that extends it is sent
 * as those ids plus its new messages' delta (vLLM's `kv_transfer_params.prompt_token_ids`), so a
 * template that rewrites history cannot change what the model is shown, and the calls merge into
 * one sample; its recorded prompt is the kept pieces and the delta.
 *
 * With `apiKey` the proxy checks clients' keys (http-server.ts) and keeps them: the upstream gets
 * `upstreamApiKey` or no Authorization at all. Without `apiKey`, the client's Authorization goes
 * upstream as it came (the proxy is transparent), unless `upstreamApiKey` replaces it.
 *
 * Upstream errors come back with the upstream's status and body; an upstream that cannot be
 * reached is a 502 in OpenAI's error shape; a recorded call whose response lacks ids or logprobs is
 * a 502 naming what was missing, and nothing of it is recorded. Every request stands alone: one
 * that fails fails nobody else's. Pure Node, fastify and fetch.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { captureTimeline, type PromptMessage } from '../timeline/capture';
import type { Timeline } from '../timeline/types';
import { checkEpisodeId } from './episode-ids';
import { checkApiKey } from './api-key';
import { GatewayError } from './errors';
import { createHttpServer } from './http-server';
import type { TimelineRecorder } from './server';
import { chatBoundaries, inParallel, promptMessages, upstreamTokens } from './upstream-split';
import type { TitoPlan, TokenInTokenOut } from './upstream-tito';
import { engineCalls, isEmptyChunk, isObject, recordingRequest, StreamedCalls, stripUnasked, type Asked, type EngineCall, type Endpoint, type JsonObject } from './upstream-tokens';

export interface RecordingProxyOptions {
  /** The upstream's OpenAI base URL, e.g. http://127.0.0.1:8001/v1 (its /health, /tokenize and /detokenize are beside the /v1). */
  upstream: string;
  /** Where recorded timelines go; awaited before the response ends. */
  recorder: TimelineRecorder;
  /** Notices (once per kind): default console.warn. */
  log?: (line: string) => void;
  /** How long a client has to send its request, and an open connection may send nothing (default REQUEST_TIMEOUT_MS, http-server.ts). */
  requestTimeoutMs?: number;
  /** The key clients must send this proxy on every route but /health; never sent upstream. */
  apiKey?: string;
  /** The key sent upstream (its /v1 routes, /tokenize, /detokenize) in place of whatever the client sent. */
  upstreamApiKey?: string;
  /**
   * Token-in/token-out (upstream-tito.ts; loadTokenInTokenOut with the served model's tokenizer
   * directory): each recorded chat conversation is kept as the ids the server saw and returned, and a
   * request that extends it is sent as those ids and the new messages' delta. Left out, the server
   * renders every request's messages.
   */
  tokenInTokenOut?: TokenInTokenOut;
}

/** The largest request body forwarded (docs/gateway.md): a real model's context and images need more than the embedded gateway's 4 MiB. */
export const PROXY_BODY_LIMIT = 16 << 20;

const EPISODE_HEADER = 'x-episode-id';
const AGENT_HEADER = 'x-agent-name';
/** Request headers passed on to the upstream: vLLM's request id (the key: upstreamAuthorization). */
const FORWARDED_HEADERS = ['x-request-id'] as const;

/** `upstream` without trailing slashes, and its server root (the same without a final /v1). */
export function upstreamUrls(upstream: string): { api: string; root: string } {
  let url: URL;
  try {
    url = new URL(upstream);
  } catch {
    throw new Error(`--upstream ${JSON.stringify(upstream)} is not a URL; give the engine's OpenAI base URL, e.g. http://127.0.0.1:8001/v1`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`--upstream ${upstream}: only http and https URLs are supported`);
  const api = upstream.replace(/\/+$/, '');
  return { api, root: api.replace(/\/v1$/, '') };
}

export function createRecordingProxy(opts: RecordingProxyOptions): FastifyInstance {
  const { api, root } = upstreamUrls(opts.upstream);
  const tokens = upstreamTokens(root);
  const log = opts.log ?? ((line: string) => console.warn(line));
  const said = new Set<string>();
  const once = (key: string, line: string) => {
    if (said.has(key)) return;
    said.add(key);
    log(line);
  };
  // As the gateway: the documented request timeout, and a body over the limit a 413 once it has come
  // (http-server.ts); open connections closed on close.
  const app = createHttpServer({ bodyLimit: PROXY_BODY_LIMIT, requestTimeoutMs: opts.requestTimeoutMs, apiKey: opts.apiKey });
  const upstreamKey = opts.upstreamApiKey === undefined ? undefined : `Bearer ${checkApiKey(opts.upstreamApiKey, 'upstreamApiKey')}`;
  /** What the upstream is sent as Authorization: a keyed proxy's clients hold the proxy's key, which must not leave for another host. */
  const upstreamAuthorization = (req: FastifyRequest): string | undefined => {
    if (upstreamKey !== undefined) return upstreamKey;
    if (opts.apiKey !== undefined) return undefined;
    const a = req.headers.authorization;
    return typeof a === 'string' ? a : undefined;
  };

  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(new GatewayError(404, `no route ${req.method} ${req.url} (this proxy forwards /health, /v1/models, /v1/chat/completions and /v1/completions)`, 'not_found_error', null, 'unknown_url').toJSON());
  });
  app.addHook('preHandler', async (req) => {
    const episode = req.headers[EPISODE_HEADER];
    if (episode !== undefined) checkEpisodeId(episode);
  });

  const headersOf = (req: FastifyRequest): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const h of FORWARDED_HEADERS) {
      const v = req.headers[h];
      if (typeof v === 'string') out[h] = v;
    }
    const auth = upstreamAuthorization(req);
    if (auth !== undefined) out.authorization = auth;
    return out;
  };

  /** fetch, with a network failure as a 502 and the client's disconnect aborting it. */
  const send = async (url: string, req: FastifyRequest, reply: FastifyReply, body?: JsonObject): Promise<Response> => {
    try {
      return await fetch(url, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { ...headersOf(req), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: abortOnDisconnect(reply),
      });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      throw new GatewayError(502, `the upstream ${url} could not be reached (${err instanceof Error ? err.message : String(err)}${cause})`, 'server_error', null, 'upstream_unreachable');
    }
  };

  /** The upstream's answer as it came: status, content type and body. */
  const passThrough = async (res: Response, reply: FastifyReply): Promise<FastifyReply> => {
    const type = res.headers.get('content-type');
    if (type?.startsWith('text/event-stream') && res.body) {
      const raw = hijack(reply, res.status, type);
      try {
        for await (const chunk of res.body) raw.write(chunk);
      } catch {
        // The client went away (its abort stopped the upstream read) or the upstream broke off.
      }
      raw.end();
      return reply;
    }
    const bytes = Buffer.from(await bodyOf(res, (r) => r.arrayBuffer()));
    reply.status(res.status);
    if (type) reply.header('content-type', type);
    return reply.send(bytes);
  };

  const forwardGet = (path: (req: FastifyRequest) => string) => async (req: FastifyRequest, reply: FastifyReply) => passThrough(await send(path(req), req, reply), reply);
  app.get('/health', forwardGet(() => `${root}/health`));
  app.get('/v1/models', forwardGet(() => `${api}/models`));
  // OpenAI serves one model's card; vLLM does not (404): then it is read from the list.
  app.get<{ Params: { '*': string } }>('/v1/models/*', async (req, reply) => {
    // Decoded once by fastify; sent encoded, so an id cannot walk to another upstream path.
    const id = req.params['*'];
    const res = await send(`${api}/models/${encodeURIComponent(id)}`, req, reply);
    if (res.status !== 404) return passThrough(res, reply);
    const list = await send(`${api}/models`, req, reply);
    if (!list.ok) return passThrough(list, reply);
    const body: unknown = await list.json().catch(() => undefined);
    const card = isObject(body) && Array.isArray(body.data) ? body.data.find((m: unknown) => isObject(m) && m.id === id) : undefined;
    if (card === undefined) throw new GatewayError(404, `The model '${id}' does not exist upstream`, 'not_found_error', 'model', 'model_not_found');
    return card;
  });

  const agentOf = (req: FastifyRequest): string => {
    const a = req.headers[AGENT_HEADER];
    return typeof a === 'string' && a !== '' ? a : 'agent';
  };

  /**
   * The engine's calls as timelines: the prompt split per message where the engine's template allows
   * (chat), every text the engine's own; a call sent token-in (plan.extends) has the pieces it was
   * made of. `keep` then keeps the calls for token-in/token-out, once they are recorded.
   */
  const timelinesOf = async (kind: Endpoint, body: JsonObject, calls: EngineCall[], responseId: string | undefined, req: FastifyRequest, plan?: TitoPlan): Promise<{ timelines: Timeline[]; keep: () => void }> => {
    const auth = upstreamAuthorization(req);
    const model = typeof body.model === 'string' ? body.model : '';
    const tools = Array.isArray(body.tools) && body.tools.length > 0 ? JSON.stringify(body.tools) : '';
    const call = `${responseId ?? 'call'}~${randomUUID().slice(0, 8)}`;
    // A chat's n choices share one prompt: split once.
    let bounds: number[] = [];
    let sentIds: PromptMessage[] | undefined;
    if (kind === 'chat') {
      const prompt = calls[0]!.promptTokenIds;
      const ext = plan?.extends;
      if (ext && sameIds(prompt, ext.promptIds)) sentIds = [...ext.kept, { text: await tokens.detokenize(model, ext.delta, auth), tokenIds: ext.delta }];
      else if (ext) once('tito-ignored', `recording proxy: the upstream did not take the kept ids as the prompt (kv_transfer_params.prompt_token_ids; vLLM takes them from 0.32 on): it rendered the messages itself, so conversations merge only where its template is append-only`);
      if (!sentIds) bounds = await chatBoundaries(tokens, body, prompt, auth);
      const messages = Array.isArray(body.messages) ? body.messages.length : 0;
      if (!sentIds && bounds.length === 0 && messages > 1) once('no-split', `recording proxy: ${root}/tokenize gave no message boundaries inside a ${messages}-message prompt; such prompts are recorded as one message (they still train, but merge with no other call)`);
    }
    const keeps: Array<() => void> = [];
    const timelines = await inParallel(calls, async (c) => {
      const [prompt, text] = await Promise.all([sentIds ?? promptMessages(tokens, model, c.promptTokenIds, bounds, auth), tokens.detokenize(model, c.tokenIds, auth)]);
      const tito = opts.tokenInTokenOut;
      if (tito && plan) {
        keeps.push(() => {
          const why = guarded(() => tito.keep(plan, body, c, prompt, text, sentIds !== undefined));
          if (why) once(`tito-${why.kind}`, `recording proxy: ${why.text}`);
        });
      }
      return captureTimeline({ id: `${call}-${c.index}`, agent: agentOf(req), tools, prompt, output: { text, tokenIds: c.tokenIds, logprobs: c.logprobs } });
    });
    return { timelines, keep: () => keeps.forEach((k) => k()) };
  };

  /** Token-in/token-out's plan for a recorded chat request (undefined when it is off), its notice said once. */
  const planOf = (kind: Endpoint, body: JsonObject, episode: string, req: FastifyRequest): TitoPlan | undefined => {
    const tito = opts.tokenInTokenOut;
    if (kind !== 'chat' || tito === undefined) return undefined;
    const planned: { plan?: TitoPlan } = {};
    const failed = guarded(() => {
      planned.plan = tito.plan({ episode, agent: agentOf(req) }, body);
    });
    const why = failed ?? planned.plan?.why;
    if (why) once(`tito-${why.kind}`, `recording proxy: ${why.text}`);
    return planned.plan;
  };

  /** Token-in/token-out never fails a request: what it cannot do is a notice, and the request goes on as without it. */
  const guarded = (f: () => TitoPlan['why'] | void): TitoPlan['why'] => {
    try {
      return f() ?? undefined;
    } catch (err) {
      return { kind: 'failed', text: `token-in/token-out failed on a request (${err instanceof Error ? err.message : String(err)}); it was forwarded, and its calls not kept` };
    }
  };

  const record = async (episode: string, timelines: Timeline[]): Promise<void> => {
    try {
      for (const t of timelines) await opts.recorder(episode, t);
    } catch (err) {
      throw new GatewayError(500, `recording the call in episode ${JSON.stringify(episode)} failed: ${err instanceof Error ? err.message : String(err)}`, 'server_error', null, 'recording_failed');
    }
  };

  const generate = (kind: Endpoint, path: string) => async (req: FastifyRequest, reply: FastifyReply) => {
    const episode = req.headers[EPISODE_HEADER];
    const body = req.body;
    if (!isObject(body)) throw new GatewayError(400, 'the request body must be a JSON object', 'invalid_request_error');
    if (typeof episode !== 'string' || episode === '') return passThrough(await send(`${api}${path}`, req, reply, body), reply);

    const sent = recordingRequest(kind, body);
    const plan = planOf(kind, body, episode, req);
    const ext = plan?.extends;
    const res = await send(`${api}${path}`, req, reply, ext ? { ...sent.body, kv_transfer_params: { prompt_token_ids: ext.promptIds } } : sent.body);
    if (!res.ok) return passThrough(res, reply);
    if (res.headers.get('content-type')?.startsWith('text/event-stream') && res.body) return recordStream(kind, body, sent.asked, res, episode, req, reply, plan);
    const text = await bodyOf(res, (r) => r.text());
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new GatewayError(502, `the upstream answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`, 'server_error', null, 'upstream_bad_response');
    }
    if (!isObject(answer)) throw new GatewayError(502, 'the upstream answered with JSON that is not an object', 'server_error', null, 'upstream_bad_response');
    const recorded = await timelinesOf(kind, body, engineCalls(kind, answer), typeof answer.id === 'string' ? answer.id : undefined, req, plan);
    await record(episode, recorded.timelines);
    recorded.keep();
    return reply.status(res.status).header('content-type', res.headers.get('content-type') ?? 'application/json').send(stripUnasked(kind, answer, sent.asked));
  };

  /** A recorded stream: chunks forwarded as they arrive (cut back to what was asked), recorded when it ends. */
  const recordStream = async (kind: Endpoint, body: JsonObject, asked: Asked, res: Response, episode: string, req: FastifyRequest, reply: FastifyReply, plan?: TitoPlan): Promise<FastifyReply> => {
    const raw = hijack(reply, res.status, res.headers.get('content-type') ?? 'text/event-stream');
    const calls = new StreamedCalls(kind);
    const decoder = new TextDecoder();
    let pending = '';
    let done = false;
    let failed = false;
    const event = (block: string) => {
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data === '') return raw.write(`${block}\n\n`);
      if (data === '[DONE]') return void (done = true);
      let chunk: unknown;
      try {
        chunk = JSON.parse(data);
      } catch {
        chunk = undefined;
      }
      if (!isObject(chunk) || 'error' in chunk) {
        failed = true;
        return raw.write(`${block}\n\n`);
      }
      calls.add(chunk);
      const out = stripUnasked(kind, chunk, asked);
      if (kind === 'chat' && !(asked.tokenIds && asked.logprobs) && isEmptyChunk(out)) return;
      raw.write(`data: ${JSON.stringify(out)}\n\n`);
    };
    try {
      for await (const bytes of res.body!) {
        pending += decoder.decode(bytes, { stream: true });
        let cut: RegExpExecArray | null;
        while ((cut = /\r?\n\r?\n/.exec(pending))) {
          event(pending.slice(0, cut.index));
          pending = pending.slice(cut.index + cut[0].length);
        }
      }
      pending += decoder.decode();
      if (pending.trim() !== '') event(pending);
    } catch {
      // The client went away, or the upstream broke off: nothing is recorded.
      if (!raw.writableEnded) raw.end();
      return reply;
    }
    if (done && !failed) {
      try {
        const recorded = await timelinesOf(kind, body, calls.calls(), calls.id, req, plan);
        await record(episode, recorded.timelines);
        recorded.keep();
      } catch (err) {
        const e = err instanceof GatewayError ? err : new GatewayError(500, `recording failed: ${err instanceof Error ? err.message : String(err)}`, 'server_error');
        raw.write(`data: ${JSON.stringify(e.toJSON())}\n\n`);
      }
    } else if (!failed) {
      once('stream-cut', 'recording proxy: an upstream stream ended without [DONE]; that call was not recorded');
    }
    if (done) raw.write('data: [DONE]\n\n');
    raw.end();
    return reply;
  };

  app.post('/v1/chat/completions', generate('chat', '/chat/completions'));
  app.post('/v1/completions', generate('completion', '/completions'));
  return app;
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/** An upstream body read whole; one that breaks off is a 502. */
async function bodyOf<T>(res: Response, read: (r: Response) => Promise<T>): Promise<T> {
  try {
    return await read(res);
  } catch (err) {
    throw new GatewayError(502, `the upstream broke off its ${res.status} response (${err instanceof Error ? err.message : String(err)})`, 'server_error', null, 'upstream_bad_response');
  }
}

/** The raw response, taken over from fastify, with the upstream's status and content type written. */
function hijack(reply: FastifyReply, status: number, type: string): ServerResponse {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(status, { 'content-type': type, 'cache-control': 'no-cache', connection: 'keep-alive' });
  return raw;
}

/** Aborts when the client goes away before its response is written: the upstream request is cancelled (vLLM then stops generating). */
function abortOnDisconnect(reply: FastifyReply): AbortSignal {
  const ctl = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) ctl.abort();
  });
  return ctl.signal;
}
