/**
 * The OpenAI-compatible gateway: /v1/models, /v1/chat/completions (streamed token by token or not,
 * logprobs, the calculator as an OpenAI tool with tool_choice auto, none, required or named, n, stop,
 * max_tokens, temperature, top_p, seed) and /v1/completions, served by fastify in front of one policy
 * engine. A request that names an episode (header `x-episode-id`, optional `x-agent-name`) is
 * recorded as a timeline of that episode (src/timeline), so a third-party agent's calls can be merged
 * and trained on; a request without one is served and not recorded. Errors are OpenAI-shaped with a
 * 4xx status. A client that disconnects cancels its generation; each request's prompts share batches
 * fairly with other requests' (src/engine/batcher.ts).
 */
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Completion, SamplingParams } from '../domain/types';
import type { CompleteOptions } from '../engine/batcher';
import { GenerationAbortedError } from '../engine/row-control';
import type { TextTokenizer } from '../model/tokenizer-types';
import { closeTurn, TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../planact/protocol';
import { captureTimeline, splitPrompt } from '../timeline/capture';
import type { Timeline } from '../timeline/types';
import { calcCallConstraint } from './calc-constraint';
import { ChatStream } from './chat-stream';
import { readAssistantTurn, renderChat, toolMode } from './chat-template';
import { BODY_LIMIT } from './body-limit';
import { GatewayError } from './errors';
import { createHttpServer } from './http-server';
import { cutAtStop } from './stop-strings';
import { decodeWhole } from '../model/whole-characters';
import { PAD_TOKEN } from '../model/tokenizer';
import { checkEpisodeId } from './episode-ids';
import { MAX_PROMPTS_PER_REQUEST, MAX_REQUESTED_TOKENS, parseChatRequest, parseCompletionRequest, unknownFields } from './requests';

export interface GatewayEngine {
  /** options: the request's group (fair scheduling), its abort signal, a per-token callback, a constraint. */
  complete(prompt: string, params: SamplingParams, options?: CompleteOptions): Promise<Completion>;
}

/** Where recorded timelines go (the blob store in production); awaited before the response. */
export type TimelineRecorder = (episodeId: string, timeline: Timeline) => Promise<void>;

export interface GatewayOptions {
  engine: GatewayEngine;
  tokenizer: TextTokenizer;
  /** The model name clients must ask for (/v1/models lists it). */
  model: string;
  maxSeq: number;
  recorder?: TimelineRecorder;
  /** Where notices go (a request field ignored, once per field); default console.warn. */
  log?: (line: string) => void;
  /** How long a client has to send its request, and an open connection may send nothing (default REQUEST_TIMEOUT_MS, http-server.ts). */
  requestTimeoutMs?: number;
  /** The key clients must send (`Authorization: Bearer <key>`) on every route but /health; undefined: none (loopback only, docs/gateway.md). */
  apiKey?: string;
}

const EPISODE_HEADER = 'x-episode-id';
const AGENT_HEADER = 'x-agent-name';
const CALC_CLOSE = TOOL_CALL_CLOSE;
const CALL_OPEN = TOOL_CALL_OPEN;

export function createGateway(opts: GatewayOptions): FastifyInstance {
  // The documented request timeout and 4 MiB body limit, enforced as http-server.ts says.
  const app = createHttpServer({
    bodyLimit: BODY_LIMIT,
    requestTimeoutMs: opts.requestTimeoutMs,
    apiKey: opts.apiKey,
    // nginx's "client closed request": nobody reads it, but the log and the metrics say what happened.
    knownError: (err) => (err instanceof GenerationAbortedError ? new GatewayError(499, 'the client closed the request; its generation was cancelled') : undefined),
  });
  const created = () => Math.floor(Date.now() / 1000);

  app.setNotFoundHandler((req, reply) => {
    reply.status(404).send(new GatewayError(404, `no route ${req.method} ${req.url}`, 'not_found_error', null, 'unknown_url').toJSON());
  });

  const modelCard = { id: opts.model, object: 'model', created: 0, owned_by: 'durable-rl' };
  app.get('/v1/models', async () => ({ object: 'list', data: [modelCard] }));
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req) => {
    checkModel(req.params.id);
    return modelCard;
  });
  // Liveness for load balancers and scripts (vLLM and SGLang answer the same route).
  app.get('/health', async (_req, reply) => reply.status(200).send());

  const checkModel = (model: string) => {
    if (model !== opts.model) throw new GatewayError(404, `The model '${model}' does not exist; this gateway serves '${opts.model}'`, 'not_found_error', 'model', 'model_not_found');
  };
  // No token is longer than this many characters, so a text longer than maxSeq of them cannot fit
  // the context: refused before the tokenizer spends the only thread on it.
  const longestToken = Math.max(1, ...Array.from({ length: opts.tokenizer.vocabSize }, (_, id) => opts.tokenizer.decode([id]).length));
  const checkLength = (texts: readonly string[], param: string): void => {
    const chars = texts.reduce((n, t) => n + t.length, 0);
    if (chars > opts.maxSeq * longestToken) {
      throw new GatewayError(400, `This model's maximum context length is ${opts.maxSeq} tokens; ${param} has ${chars} characters, more than any ${opts.maxSeq} tokens can hold`, 'invalid_request_error', param, 'context_length_exceeded');
    }
  };
  const budget = (promptTokens: number, asked: number | undefined, param: string): number => {
    const room = opts.maxSeq - promptTokens;
    if (room < 1 || (asked !== undefined && asked > room)) {
      throw new GatewayError(400, `This model's maximum context length is ${opts.maxSeq} tokens; the prompt has ${promptTokens} and ${asked ?? 1} more were requested`, 'invalid_request_error', param, 'context_length_exceeded');
    }
    return asked ?? room;
  };
  // A bad episode id is refused before anything is generated (it used to fail after, with a 500).
  app.addHook('preHandler', async (req) => {
    const episode = req.headers[EPISODE_HEADER];
    if (episode !== undefined) checkEpisodeId(episode);
  });
  const record = async (req: FastifyRequest, timelines: Timeline[]) => {
    const episode = req.headers[EPISODE_HEADER];
    if (typeof episode !== 'string' || episode === '' || !opts.recorder) return;
    for (const t of timelines) await opts.recorder(episode, t);
  };
  // vLLM's leniency: a field this gateway does not know is ignored, and said once per field, when
  // the request is served (a refused one ignored nothing: its error says what was wrong).
  const ignored = new Set<string>();
  const log = opts.log ?? ((line: string) => console.warn(line));
  const noteUnknown = (body: unknown, kind: 'chat' | 'completion') => {
    for (const f of unknownFields(body, kind)) {
      // Field names are the client's: the set of those said is bounded, later new ones go unsaid.
      if (ignored.has(f) || ignored.size >= 256) continue;
      ignored.add(f);
      log(`gateway: ignoring the request field '${f}', which this gateway does not use (said once per field)`);
    }
  };
  // Stop strings are matched on whole characters, as the engine matched them (src/model/whole-characters.ts).
  const wholeText = (c: Completion): string => decodeWhole(opts.tokenizer, c.tokenIds, c.text);
  const agentOf = (req: FastifyRequest): string => {
    const a = req.headers[AGENT_HEADER];
    return typeof a === 'string' && a !== '' ? a : 'agent';
  };

  app.post('/v1/chat/completions', async (req, reply) => {
    const body = parseChatRequest(req.body);
    checkModel(body.model);
    if (body.top_logprobs && !body.logprobs) throw new GatewayError(400, 'top_logprobs needs logprobs: true', 'invalid_request_error', 'top_logprobs');
    const mode = toolMode(body);
    const tools = mode !== 'off';
    // Assistant turns are the model's own output, control tokens included; the rest is the client's text.
    refuseControlText(body.messages.map((m) => (m.role === 'assistant' ? '' : m.content)), opts.tokenizer, 'messages');
    checkLength(body.messages.map((m) => m.content ?? ''), 'messages');
    const chat = renderChat(body.messages);
    const promptIds = opts.tokenizer.encode(chat.text);
    // System and user messages render verbatim, so empty ones can leave nothing to continue from: a
    // client's error, as vLLM refuses an empty prompt ("The decoder prompt cannot be empty", a 400).
    if (promptIds.length === 0) {
      const last = `messages.${body.messages.length - 1}.content`;
      throw new GatewayError(400, `${last} is empty and so is every message before it: the prompt has no tokens to continue from`, 'invalid_request_error', last);
    }
    const maxNewTokens = budget(promptIds.length, body.max_completion_tokens ?? body.max_tokens, body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens');
    const stop = [...body.stop, ...(tools ? [CALC_CLOSE] : [])];
    noteUnknown(req.body, 'chat');
    const id = `chatcmpl-${randomUUID()}`;
    const signal = abortOnDisconnect(reply);
    const logprobOf = (t: number, lp: number, top: ReadonlyArray<{ id: number; logprob: number }>) => ({ ...tokenLogprob(opts.tokenizer, t, lp), top_logprobs: top.map((a) => tokenLogprob(opts.tokenizer, a.id, a.logprob)) });
    const stream = body.stream
      ? new ChatStream(reply.hijack().raw, { id, created: created(), model: opts.model, n: body.n, tokenizer: opts.tokenizer, holds: [...body.stop, ...(tools ? [CALL_OPEN] : [])], logprobs: body.logprobs, logprobOf })
      : undefined;
    try {
      const outs = await Promise.all(
        Array.from({ length: body.n }, (_, k) =>
          opts.engine.complete(
            chat.text,
            {
              maxNewTokens,
              temperature: body.temperature,
              topP: body.top_p,
              stop,
              ...(body.seed !== undefined ? { seed: body.seed + k } : {}),
              ...(body.top_logprobs ? { topLogprobs: body.top_logprobs } : {}),
            },
            { group: id, signal, ...(mode === 'forced' ? { constraint: calcCallConstraint } : {}), ...(stream ? { onToken: (t, lp, top) => stream.token(k, t, lp, top) } : {}) },
          ),
        ),
      );
      // A user's stop string ends the visible content before it (OpenAI's behaviour); the calculator's
      // own closing tag, when tools are offered, stays for the tool-call parser.
      const visible = (c: Completion): string => {
        if (c.finishReason !== 'stop') return c.text;
        const user = cutAtStop(wholeText(c), body.stop, body.include_stop_str_in_output);
        const call = tools ? c.text.indexOf(CALC_CLOSE) : -1;
        return user.matched !== undefined && (call < 0 || user.text.length < call) ? user.text : c.text;
      };
      const turns = outs.map((c, k) => readAssistantTurn(visible(c), c.finishReason, tools, `call_${id.slice(-12)}_${k}`));
      await record(
        req,
        outs.map((c, k) => timelineOf(`${id}-${k}`, agentOf(req), JSON.stringify(body.tools), chat.text, chat.messageStarts, c, turns[k]!.finish_reason === 'tool_calls')),
      );
      const usage = usageOf(promptIds.length, outs);
      if (stream) {
        turns.forEach((turn, k) => stream.finish(k, turn));
        stream.end(body.include_usage ? usage : undefined);
        return reply;
      }
      const choices = outs.map((c, k) => {
        const turn = turns[k]!;
        return {
          index: k,
          message: { role: 'assistant' as const, content: turn.content, ...(turn.tool_calls ? { tool_calls: turn.tool_calls } : {}), refusal: null },
          logprobs: body.logprobs ? { content: c.tokenIds.map((t, i) => logprobOf(t, c.logprobs[i]!, c.topLogprobs?.[i] ?? [])) } : null,
          finish_reason: turn.finish_reason,
        };
      });
      return { id, object: 'chat.completion', created: created(), model: opts.model, choices, usage };
    } catch (err) {
      if (!stream) throw err;
      stream.fail(err);
      return reply;
    }
  });

  app.post('/v1/completions', async (req, reply) => {
    const body = parseCompletionRequest(req.body);
    checkModel(body.model);
    if (body.stream) throw new GatewayError(400, 'stream is supported on /v1/chat/completions only', 'invalid_request_error', 'stream');
    const prompts = body.prompts;
    if (prompts.length > MAX_PROMPTS_PER_REQUEST) {
      throw new GatewayError(400, `prompt: at most ${MAX_PROMPTS_PER_REQUEST} prompts per request (got ${prompts.length}); send more requests`, 'invalid_request_error', 'prompt');
    }
    const requested = prompts.length * body.n * body.max_tokens;
    if (requested > MAX_REQUESTED_TOKENS) {
      throw new GatewayError(400, `prompts × n × max_tokens is ${requested} tokens; at most ${MAX_REQUESTED_TOKENS} per request`, 'invalid_request_error', 'max_tokens');
    }
    refuseControlText(prompts, opts.tokenizer, 'prompt');
    prompts.forEach((p, i) => checkLength([p], body.batched ? `prompt.${i}` : 'prompt'));
    const id = `cmpl-${randomUUID()}`;
    const lengths = prompts.map((p) => opts.tokenizer.encode(p).length);
    let maxNewTokens = body.max_tokens;
    for (const n of lengths) maxNewTokens = Math.min(maxNewTokens, budget(n, body.max_tokens, 'max_tokens'));
    noteUnknown(req.body, 'completion');
    const signal = abortOnDisconnect(reply);
    const outs = await Promise.all(
      prompts.flatMap((p) =>
        Array.from({ length: body.n }, (_, k) =>
          opts.engine.complete(
            p,
            { maxNewTokens, temperature: body.temperature, topP: body.top_p, stop: body.stop, ...(body.seed !== undefined ? { seed: body.seed + k } : {}), ...(body.logprobs ? { topLogprobs: body.logprobs } : {}) },
            { group: id, signal },
          ),
        ),
      ),
    );
    await record(req, outs.map((c, k) => timelineOf(`${id}-${k}`, agentOf(req), '[]', prompts[Math.floor(k / body.n)]!, [0], c)));
    const tokenText = (t: number) => opts.tokenizer.decode([t]);
    return {
      id,
      object: 'text_completion',
      created: created(),
      model: opts.model,
      choices: outs.map((c, k) => {
        const cut = c.finishReason === 'stop' ? cutAtStop(wholeText(c), body.stop, body.include_stop_str_in_output) : { text: c.text };
        return {
          index: k,
          text: cut.text,
          logprobs:
            body.logprobs !== undefined
              ? { tokens: c.tokenIds.map(tokenText), token_logprobs: c.logprobs, top_logprobs: c.topLogprobs ? c.topLogprobs.map((alts) => Object.fromEntries(alts.map((a) => [tokenText(a.id), a.logprob]))) : null, text_offset: [] }
              : null,
          finish_reason: c.finishReason === 'length' ? 'length' : 'stop',
          // vLLM's conventions: what stopped it (a stop string, or null for the end-of-sequence token), and the ids.
          stop_reason: cut.matched ?? null,
          ...(body.return_token_ids ? { prompt_token_ids: c.promptTokenIds, token_ids: c.tokenIds } : {}),
        };
      }),
      usage: usageOf(lengths.reduce((a, b) => a + b, 0), outs),
    };
  });

  /** A request recorded as the policy saw it: the rendered messages, then its output (closed as later turns render it). */
  function timelineOf(id: string, agent: string, tools: string, text: string, starts: number[], c: Completion, toolCall = false): Timeline {
    return captureTimeline({
      id,
      agent,
      tools,
      prompt: splitPrompt(text, starts, c.promptTokenIds, (t) => opts.tokenizer.encode(t)),
      // As the template renders this turn when the agent sends it back: a tool call as written, any
      // other turn closed by the end-of-turn token.
      output: { text: toolCall ? c.text : closeTurn(c.text), tokenIds: c.tokenIds, logprobs: c.logprobs },
    });
  }

  return app;
}

function usageOf(promptTokens: number, outs: readonly Completion[]) {
  const completion = outs.reduce((n, c) => n + c.tokenIds.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

/** A token's entry in OpenAI's logprobs: its text and its own bytes (a piece of a character has no text of its own). */
function tokenLogprob(tokenizer: TextTokenizer, id: number, logprob: number) {
  return { token: tokenizer.decode([id]), logprob, bytes: tokenizer.tokenBytes(id) };
}

/** Aborts when the client goes away before its response is written: its generation stops in the engine. */
function abortOnDisconnect(reply: FastifyReply): AbortSignal {
  const ctl = new AbortController();
  // Every prompt and choice of the request listens to it (a request may have thousands).
  setMaxListeners(0, ctl.signal);
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) ctl.abort();
  });
  return ctl.signal;
}

/**
 * A client's text must not become the policy's control tokens: the end-of-turn and padding texts are
 * single special ids to the tokenizer, so a message carrying one would end or pad the model's context.
 */
function refuseControlText(texts: readonly string[], tokenizer: GatewayOptions['tokenizer'], param: string): void {
  const reserved = [tokenizer.eosToken, PAD_TOKEN];
  texts.forEach((text, i) => {
    const hit = reserved.find((r) => text.includes(r));
    if (hit) throw new GatewayError(400, `${param}.${i} contains ${hit}, the policy's reserved control text; remove it`, 'invalid_request_error', `${param}.${i}`);
  });
}
