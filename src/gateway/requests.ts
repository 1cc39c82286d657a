/**
 * The OpenAI request bodies the gateway accepts, validated with zod, as leniently as vLLM: every
 * message shape OpenAI's API allows is read, and fields the gateway does not know are ignored (the
 * route logs each such field once) rather than refused. What the gateway knows but cannot honour
 * (a penalty, a logit bias, a JSON response format, an image) is refused with a 400 naming it, so no
 * option is dropped silently.
 */
import { z } from 'zod';
import { GatewayError } from './errors';

const TextPart = z.object({ type: z.literal('text'), text: z.string() });
/** Message content: a string or an array of parts; only text parts can reach a text-only policy. */
const Content = z.union([z.string(), z.array(z.object({ type: z.string() }).passthrough()).min(1)]);

const ToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

/** OpenAI's message shapes, as clients send them (LangChain, the openai client, agents echoing a response back). */
const RawMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: Content, name: z.string().optional() }),
  z.object({ role: z.literal('developer'), content: Content, name: z.string().optional() }),
  z.object({ role: z.literal('user'), content: Content, name: z.string().optional() }),
  // An assistant message as the API returned it: refusal, annotations, audio, function_call: null and
  // a reasoning parser's reasoning_content all come back with it.
  z.object({
    role: z.literal('assistant'),
    content: Content.nullable().optional(),
    tool_calls: z.array(ToolCall).nullable().optional(),
    function_call: z.object({ name: z.string(), arguments: z.string() }).nullable().optional(),
    name: z.string().optional(),
    refusal: z.string().nullable().optional(),
  }),
  z.object({ role: z.literal('tool'), content: Content, tool_call_id: z.string(), name: z.string().optional() }),
  // The deprecated function-calling API's result message.
  z.object({ role: z.literal('function'), content: Content.nullable(), name: z.string() }),
]);
type RawMessage = z.infer<typeof RawMessage>;

/** A message with its content as one text, what the chat template renders. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: Array<z.infer<typeof ToolCall>> }
  | { role: 'tool'; content: string };

/** Deepest nesting of a tool's parameter schema (a JSON schema is a few levels deep; 5,000 is an attack). */
export const MAX_SCHEMA_DEPTH = 64;

const Tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string(),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).refine((p) => depthOf(p) <= MAX_SCHEMA_DEPTH, `is nested more than ${MAX_SCHEMA_DEPTH} levels deep`).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

const ToolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string() }) }),
]);

/** Prompts one /v1/completions request may carry; the batcher interleaves them fairly with other requests'. */
export const MAX_PROMPTS_PER_REQUEST = 10_000;
/** Tokens one request may ask to generate in all (prompts × n × max_tokens). */
export const MAX_REQUESTED_TOKENS = 1 << 21;

/** A field that only has a neutral value here: accepted at it, refused otherwise (the policy's sampler has no such knob). */
const neutral = <T extends z.ZodTypeAny>(schema: T, isNeutral: (v: z.infer<T>) => boolean, why: string) =>
  schema.nullable().optional().refine((v) => v === null || v === undefined || isNeutral(v), why);
const NO_PENALTY = 'is not supported by this engine; only 0 (no penalty) is accepted';

const Sampling = {
  model: z.string().min(1),
  max_tokens: z.number().int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(2).nullable().default(1),
  top_p: z.number().gt(0).max(1).nullable().default(1),
  n: z.number().int().min(1).max(16).nullable().default(1),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).nullable().optional(),
  seed: z.number().int().nullable().optional(),
  stream: z.boolean().nullable().default(false),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullable().optional(),
  user: z.string().optional(),
  frequency_penalty: neutral(z.number(), (v) => v === 0, `frequency_penalty ${NO_PENALTY}`),
  presence_penalty: neutral(z.number(), (v) => v === 0, `presence_penalty ${NO_PENALTY}`),
  logit_bias: neutral(z.record(z.string(), z.number()), (v) => Object.keys(v).length === 0, 'logit_bias is not supported by this engine; only an empty map is accepted'),
  /** vLLM's extension: keep the stop string at the end of the text (default: cut before it, as OpenAI). */
  include_stop_str_in_output: z.boolean().optional(),
};

const ChatFields = z.object({
  ...Sampling,
  messages: z.array(RawMessage).min(1),
  max_completion_tokens: z.number().int().min(1).nullable().optional(),
  logprobs: z.boolean().nullable().default(false),
  top_logprobs: z.number().int().min(0).max(20).nullable().optional(),
  tools: z.array(Tool).nullable().optional(),
  tool_choice: ToolChoice.nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  response_format: z.object({ type: z.enum(['text', 'json_object', 'json_schema']) }).passthrough().nullable().optional(),
});

const CompletionFields = z.object({
  ...Sampling,
  prompt: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  logprobs: z.number().int().min(0).max(20).nullable().optional(),
  echo: z.literal(false).nullable().optional(),
  suffix: neutral(z.string(), (v) => v === '', 'suffix (insertion) is not supported by this engine'),
  best_of: neutral(z.number().int(), (v) => v === 1, 'best_of other than 1 is not supported by this engine; use n'),
  /** vLLM's extension: return the prompt's and each choice's token ids. */
  return_token_ids: z.boolean().optional(),
});

/** What both endpoints share, normalised: defaults filled, nulls gone. */
export interface SamplingRequest {
  model: string;
  temperature: number;
  top_p: number;
  n: number;
  stop: string[];
  seed?: number;
  stream: boolean;
  include_usage: boolean;
  include_stop_str_in_output: boolean;
}

/** A chat request, normalised: every message's content one text. */
export interface ChatRequest extends SamplingRequest {
  messages: ChatMessage[];
  max_tokens?: number;
  max_completion_tokens?: number;
  logprobs: boolean;
  top_logprobs?: number;
  tools: Array<z.infer<typeof Tool>>;
  tool_choice: 'auto' | 'none' | 'required' | { name: string };
}

export interface CompletionRequest extends SamplingRequest {
  prompts: string[];
  /** The prompt was an array (error messages name prompt.<i>). */
  batched: boolean;
  max_tokens: number;
  logprobs?: number;
  return_token_ids: boolean;
}

type SamplingFields = z.infer<z.ZodObject<typeof Sampling>>;

function samplingOf(r: SamplingFields): SamplingRequest {
  return {
    model: r.model,
    temperature: r.temperature ?? 1,
    top_p: r.top_p ?? 1,
    n: r.n ?? 1,
    stop: toList(r.stop),
    ...(r.seed != null ? { seed: r.seed } : {}),
    stream: r.stream ?? false,
    include_usage: r.stream_options?.include_usage ?? false,
    include_stop_str_in_output: r.include_stop_str_in_output ?? false,
  };
}

/** Fields of a request the gateway does not know (ignored), as `field` or `messages.role.field`. */
export function unknownFields(body: unknown, kind: 'chat' | 'completion'): string[] {
  if (typeof body !== 'object' || body === null) return [];
  const known = new Set(Object.keys((kind === 'chat' ? ChatFields : CompletionFields).shape));
  const out = Object.keys(body).filter((k) => !known.has(k));
  const messages = (body as { messages?: unknown }).messages;
  if (kind === 'chat' && Array.isArray(messages)) {
    for (const m of messages) {
      if (typeof m !== 'object' || m === null) continue;
      const role = String((m as { role?: unknown }).role);
      const shape = RawMessage.options.find((o) => o.shape.role.value === role)?.shape;
      if (shape) for (const k of Object.keys(m)) if (!(k in shape)) out.push(`messages.${role}.${k}`);
    }
  }
  return out;
}

export function parseChatRequest(body: unknown): ChatRequest {
  const r = parseBody(ChatFields, body);
  if (r.response_format && r.response_format.type !== 'text') {
    throw new GatewayError(
      400,
      `response_format ${r.response_format.type} cannot be honoured: the embedded policy writes the Plan/Act protocol, not JSON, and no JSON constraint over its vocabulary is built; call the tool with tool_choice instead, or put a model that writes JSON behind the gateway (--upstream)`,
      'invalid_request_error',
      'response_format',
    );
  }
  const tool_choice = r.tool_choice && typeof r.tool_choice === 'object' ? { name: r.tool_choice.function.name } : (r.tool_choice ?? 'auto');
  return {
    ...samplingOf(r),
    messages: r.messages.map((m, i) => normaliseMessage(m, `messages.${i}`)),
    ...(r.max_tokens != null ? { max_tokens: r.max_tokens } : {}),
    ...(r.max_completion_tokens != null ? { max_completion_tokens: r.max_completion_tokens } : {}),
    logprobs: r.logprobs ?? false,
    ...(r.top_logprobs != null ? { top_logprobs: r.top_logprobs } : {}),
    tools: r.tools ?? [],
    tool_choice,
  };
}

export function parseCompletionRequest(body: unknown): CompletionRequest {
  const r = parseBody(CompletionFields, body);
  return {
    ...samplingOf(r),
    prompts: Array.isArray(r.prompt) ? r.prompt : [r.prompt],
    batched: Array.isArray(r.prompt),
    max_tokens: r.max_tokens ?? 16,
    ...(r.logprobs != null ? { logprobs: r.logprobs } : {}),
    return_token_ids: r.return_token_ids ?? false,
  };
}

/** Parses a body, turning the first problem into a 400 naming the parameter. */
function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const param = issue.path.map(String).join('.') || null;
  const message = issue.code === 'custom' ? issue.message : `${param ?? 'body'}: ${issue.message}`;
  throw new GatewayError(400, message, 'invalid_request_error', param, 'invalid_value');
}

function normaliseMessage(m: RawMessage, param: string): ChatMessage {
  switch (m.role) {
    case 'system':
    case 'developer':
      // The policy has one instruction role; a developer message is OpenAI's newer name for it.
      return { role: 'system', content: textOf(m.content, param) };
    case 'user':
      return { role: 'user', content: textOf(m.content, param) };
    case 'tool':
      return { role: 'tool', content: textOf(m.content, param) };
    case 'function':
      return { role: 'tool', content: m.content === null ? '' : textOf(m.content, param) };
    case 'assistant': {
      const calls = [...(m.tool_calls ?? []), ...(m.function_call ? [{ id: 'function_call', type: 'function' as const, function: m.function_call }] : [])];
      const content = m.content === null || m.content === undefined ? null : textOf(m.content, param, ['text', 'refusal']);
      return { role: 'assistant', content, ...(calls.length > 0 ? { tool_calls: calls } : {}) };
    }
  }
}

/** Content as one text: a string as is, text parts joined; an image, audio or file part is refused by name. */
function textOf(content: z.infer<typeof Content>, param: string, kinds: readonly string[] = ['text']): string {
  if (typeof content === 'string') return content;
  return content
    .map((part, j) => {
      if (!kinds.includes(part.type)) {
        throw new GatewayError(400, `${param}.content.${j} is a '${part.type}' part; the policy reads text only`, 'invalid_request_error', `${param}.content.${j}`);
      }
      const text = part.type === 'refusal' ? (part as { refusal?: unknown }).refusal : TextPart.safeParse(part).data?.text;
      if (typeof text !== 'string') throw new GatewayError(400, `${param}.content.${j} has no text`, 'invalid_request_error', `${param}.content.${j}`);
      return text;
    })
    .join('');
}

function toList(stop: string | string[] | null | undefined): string[] {
  return stop === undefined || stop === null ? [] : Array.isArray(stop) ? stop : [stop];
}

/** Nesting depth of a JSON value, without recursion (a hostile schema cannot overflow the stack). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    deepest = Math.max(deepest, d);
    if (deepest > MAX_SCHEMA_DEPTH) return deepest;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}
