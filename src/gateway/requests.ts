/**
 * The OpenAI request bodies the gateway accepts, validated with zod. Unknown fields are refused by
 * name (no silent options), like OpenAI's "Unrecognized request argument supplied".
 */
import { z } from 'zod';
import { GatewayError } from './errors';

const ToolCall = z.object({
  id: z.string(),
  type: z.literal('function'),
  function: z.object({ name: z.string(), arguments: z.string() }).strict(),
}).strict();

const ChatMessage = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content: z.string(), name: z.string().optional() }).strict(),
  z.object({ role: z.literal('user'), content: z.string(), name: z.string().optional() }).strict(),
  // refusal: null is what the API returns on every assistant message; agents send the message back as is.
  z.object({ role: z.literal('assistant'), content: z.string().nullable().optional(), tool_calls: z.array(ToolCall).optional(), name: z.string().optional(), refusal: z.null().optional() }).strict(),
  // LangChain sends the tool's name with its result; OpenAI accepts it.
  z.object({ role: z.literal('tool'), content: z.string(), tool_call_id: z.string(), name: z.string().optional() }).strict(),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

const Tool = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string(), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional(), strict: z.boolean().optional() }).strict(),
}).strict();

/** Prompts one /v1/completions request may carry (the engine's batch size). */
export const MAX_PROMPTS_PER_REQUEST = 64;

const Sampling = {
  model: z.string().min(1),
  max_tokens: z.number().int().min(1).optional(),
  temperature: z.number().min(0).max(2).default(1),
  top_p: z.number().gt(0).max(1).default(1),
  n: z.number().int().min(1).max(16).default(1),
  stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
  seed: z.number().int().optional(),
  stream: z.boolean().default(false),
  stream_options: z.object({ include_usage: z.boolean().optional() }).strict().optional(),
  user: z.string().optional(),
};

export const ChatRequest = z
  .object({
    ...Sampling,
    messages: z.array(ChatMessage).min(1),
    max_completion_tokens: z.number().int().min(1).optional(),
    logprobs: z.boolean().default(false),
    top_logprobs: z.number().int().min(0).max(20).optional(),
    tools: z.array(Tool).optional(),
    tool_choice: z.enum(['auto', 'none']).optional(),
  })
  .strict();
export type ChatRequest = z.infer<typeof ChatRequest>;

export const CompletionRequest = z
  .object({
    ...Sampling,
    /** At most MAX_PROMPTS_PER_REQUEST prompts (checked by the route: one request cannot queue thousands ahead of others). */
    prompt: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    logprobs: z.number().int().min(0).max(5).optional(),
    echo: z.literal(false).optional(),
    /** vLLM's extension: return the prompt's and each choice's token ids. */
    return_token_ids: z.boolean().optional(),
    /** vLLM's extension: keep the stop string at the end of the text (default: cut before it, as OpenAI). */
    include_stop_str_in_output: z.boolean().optional(),
  })
  .strict();
export type CompletionRequest = z.infer<typeof CompletionRequest>;

/** Parses a body, turning the first problem into a 400 naming the parameter. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const param = issue.path.map(String).join('.') || null;
  const message = issue.code === 'unrecognized_keys' ? `Unrecognized request argument supplied: ${issue.keys.join(', ')}` : `${param ?? 'body'}: ${issue.message}`;
  throw new GatewayError(400, message, 'invalid_request_error', issue.code === 'unrecognized_keys' ? issue.keys[0]! : param, 'invalid_value');
}
