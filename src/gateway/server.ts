/**
 * The OpenAI-compatible gateway: /v1/models, /v1/chat/completions (streaming or not, logprobs,
 * the calculator as an OpenAI tool, n, stop, max_tokens, temperature, top_p, seed) and
 * /v1/completions, served by fastify in front of one policy engine. A request that names an
 * episode (header `x-episode-id`, optional `x-agent-name`) is recorded as a timeline of that
 * episode (src/timeline), so a third-party agent's calls can be merged and trained on; a request
 * without one is served and not recorded. Errors are OpenAI-shaped with a 4xx status.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Completion, SamplingParams } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';
import { closeTurn } from '../planact/protocol';
import { captureTimeline, splitPrompt } from '../timeline/capture';
import type { Timeline } from '../timeline/types';
import { offersCalculator, readAssistantTurn, renderChat } from './chat-template';
import { GatewayError } from './errors';
import { cutAtStop } from './stop-strings';
import { PAD_TOKEN } from '../model/tokenizer';
import { checkEpisodeId } from './episode-ids';
import { ChatRequest, CompletionRequest, MAX_PROMPTS_PER_REQUEST, parseBody } from './requests';

export interface GatewayEngine {
  complete(prompt: string, params: SamplingParams): Promise<Completion>;
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
}

const EPISODE_HEADER = 'x-episode-id';
const AGENT_HEADER = 'x-agent-name';
const CALC_CLOSE = '</calc>';

export function createGateway(opts: GatewayOptions): FastifyInstance {
  const app = Fastify({ logger: false, bodyLimit: 4 << 20 });
  const created = () => Math.floor(Date.now() / 1000);

  app.setErrorHandler((err: Error & { statusCode?: number; validation?: unknown }, _req, reply) => {
    if (err instanceof GatewayError) return reply.status(err.status).send(err.toJSON());
    // Fastify's own 4xx (malformed JSON, wrong content type, body too large) keep their status.
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.status(err.statusCode).send(new GatewayError(err.statusCode, `invalid request: ${err.message}`).toJSON());
    }
    return reply.status(500).send(new GatewayError(500, `internal error: ${err.message}`, 'server_error').toJSON());
  });
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
  const agentOf = (req: FastifyRequest): string => {
    const a = req.headers[AGENT_HEADER];
    return typeof a === 'string' && a !== '' ? a : 'agent';
  };

  app.post('/v1/chat/completions', async (req, reply) => {
    const body = parseBody(ChatRequest, req.body);
    checkModel(body.model);
    if (body.top_logprobs && !body.logprobs) throw new GatewayError(400, 'top_logprobs needs logprobs: true', 'invalid_request_error', 'top_logprobs');
    const tools = offersCalculator(body);
    // Assistant turns are the model's own output, control tokens included; the rest is the client's text.
    refuseControlText(body.messages.map((m) => (m.role === 'assistant' ? '' : m.content)), opts.tokenizer, 'messages');
    checkLength(body.messages.map((m) => m.content ?? ''), 'messages');
    const chat = renderChat(body.messages);
    const promptIds = opts.tokenizer.encode(chat.text);
    const maxNewTokens = budget(promptIds.length, body.max_completion_tokens ?? body.max_tokens, body.max_completion_tokens !== undefined ? 'max_completion_tokens' : 'max_tokens');
    const stop = [...toList(body.stop), ...(tools ? [CALC_CLOSE] : [])];
    const id = `chatcmpl-${randomUUID()}`;
    const outs = await Promise.all(
      Array.from({ length: body.n }, (_, k) =>
        opts.engine.complete(chat.text, {
          maxNewTokens,
          temperature: body.temperature,
          topP: body.top_p,
          stop,
          ...(body.seed !== undefined ? { seed: body.seed + k } : {}),
          ...(body.top_logprobs ? { topLogprobs: body.top_logprobs } : {}),
        }),
      ),
    );
    // A user's stop string ends the visible content before it (OpenAI's behaviour); the calculator's
    // own closing tag, when tools are offered, stays for the tool-call parser.
    const visible = (c: Completion): string => {
      if (c.finishReason !== 'stop') return c.text;
      const user = cutAtStop(c.text, toList(body.stop));
      const call = tools ? c.text.indexOf(CALC_CLOSE) : -1;
      return user.matched !== undefined && (call < 0 || user.text.length < call) ? user.text : c.text;
    };
    const turns = outs.map((c, k) => readAssistantTurn(visible(c), c.finishReason, tools, `call_${id.slice(-12)}_${k}`));
    await record(
      req,
      outs.map((c, k) => timelineOf(`${id}-${k}`, agentOf(req), JSON.stringify(body.tools ?? []), chat.text, chat.messageStarts, c, turns[k]!.finish_reason === 'tool_calls')),
    );
    const choices = outs.map((c, k) => {
      const turn = turns[k]!;
      return {
        index: k,
        message: { role: 'assistant' as const, content: turn.content, ...(turn.tool_calls ? { tool_calls: turn.tool_calls } : {}), refusal: null },
        logprobs: body.logprobs
          ? { content: c.tokenIds.map((t, i) => ({ ...tokenLogprob(opts.tokenizer, t, c.logprobs[i]!), top_logprobs: (c.topLogprobs?.[i] ?? []).map((a) => tokenLogprob(opts.tokenizer, a.id, a.logprob)) })) }
          : null,
        finish_reason: turn.finish_reason,
      };
    });
    const usage = usageOf(promptIds.length, outs);
    if (!body.stream) return { id, object: 'chat.completion', created: created(), model: opts.model, choices, usage };
    return streamChat(reply, { id, created: created(), model: opts.model, choices, usage: body.stream_options?.include_usage ? usage : undefined });
  });

  app.post('/v1/completions', async (req) => {
    const body = parseBody(CompletionRequest, req.body);
    checkModel(body.model);
    if (body.stream) throw new GatewayError(400, 'stream is supported on /v1/chat/completions only', 'invalid_request_error', 'stream');
    if (body.logprobs) throw new GatewayError(400, 'logprobs > 0 (top alternatives) is not supported by the embedded engine; logprobs: 0 returns the sampled tokens\' logprobs', 'invalid_request_error', 'logprobs');
    const prompts = Array.isArray(body.prompt) ? body.prompt : [body.prompt];
    if (prompts.length > MAX_PROMPTS_PER_REQUEST) {
      throw new GatewayError(400, `prompt: at most ${MAX_PROMPTS_PER_REQUEST} prompts per request (got ${prompts.length}); send more requests`, 'invalid_request_error', 'prompt');
    }
    refuseControlText(prompts, opts.tokenizer, 'prompt');
    prompts.forEach((p, i) => checkLength([p], Array.isArray(body.prompt) ? `prompt.${i}` : 'prompt'));
    const id = `cmpl-${randomUUID()}`;
    const lengths = prompts.map((p) => opts.tokenizer.encode(p).length);
    const maxNewTokens = Math.min(...lengths.map((n) => budget(n, body.max_tokens ?? 16, 'max_tokens')));
    const outs = await Promise.all(
      prompts.flatMap((p) =>
        Array.from({ length: body.n }, (_, k) =>
          opts.engine.complete(p, { maxNewTokens, temperature: body.temperature, topP: body.top_p, stop: toList(body.stop), ...(body.seed !== undefined ? { seed: body.seed + k } : {}) }),
        ),
      ),
    );
    await record(req, outs.map((c, k) => timelineOf(`${id}-${k}`, agentOf(req), '[]', prompts[Math.floor(k / body.n)]!, [0], c)));
    return {
      id,
      object: 'text_completion',
      created: created(),
      model: opts.model,
      choices: outs.map((c, k) => {
        const cut = c.finishReason === 'stop' ? cutAtStop(c.text, toList(body.stop), body.include_stop_str_in_output ?? false) : { text: c.text };
        return {
          index: k,
          text: cut.text,
          logprobs: body.logprobs === 0 ? { tokens: c.tokenIds.map((t) => opts.tokenizer.decode([t])), token_logprobs: c.logprobs, top_logprobs: null, text_offset: [] } : null,
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

function toList(stop: string | string[] | undefined): string[] {
  return stop === undefined ? [] : Array.isArray(stop) ? stop : [stop];
}

function usageOf(promptTokens: number, outs: readonly Completion[]) {
  const completion = outs.reduce((n, c) => n + c.tokenIds.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

function tokenLogprob(tokenizer: TextTokenizer, id: number, logprob: number) {
  const token = tokenizer.decode([id]);
  return { token, logprob, bytes: [...Buffer.from(token, 'utf8')] };
}

interface StreamedChat {
  id: string;
  created: number;
  model: string;
  choices: Array<{ index: number; message: { content: string | null; tool_calls?: unknown[] }; logprobs: unknown; finish_reason: string }>;
  usage: ReturnType<typeof usageOf> | undefined;
}

/**
 * Server-sent events in OpenAI's chunk format. The engine generates a choice whole (it batches
 * requests, it does not yield tokens one by one), so the content goes out as one delta per choice.
 */
function streamChat(reply: FastifyReply, s: StreamedChat): FastifyReply {
  // The response is written by hand; fastify must not send one of its own.
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const send = (chunk: unknown) => reply.raw.write(`data: ${JSON.stringify(chunk)}\n\n`);
  const base = { id: s.id, object: 'chat.completion.chunk', created: s.created, model: s.model };
  for (const c of s.choices) {
    send({ ...base, choices: [{ index: c.index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] });
    const delta = c.message.tool_calls
      ? { ...(c.message.content ? { content: c.message.content } : {}), tool_calls: c.message.tool_calls.map((t, i) => ({ index: i, ...(t as object) })) }
      : { content: c.message.content ?? '' };
    send({ ...base, choices: [{ index: c.index, delta, logprobs: c.logprobs, finish_reason: null }] });
    send({ ...base, choices: [{ index: c.index, delta: {}, logprobs: null, finish_reason: c.finish_reason }] });
  }
  if (s.usage) send({ ...base, choices: [], usage: s.usage });
  reply.raw.write('data: [DONE]\n\n');
  reply.raw.end();
  return reply;
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
