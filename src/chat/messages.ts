/**
 * OpenAI-style chat messages and tools, as the chat completions API carries them and as chat
 * templates read them (transformers and vLLM hand the same dicts to Jinja).
 */
import { PyDict, PyJsonError, pyJsonLoads, pyToJs } from './py-json';

export interface ToolCall {
  id?: string;
  type?: 'function';
  /** arguments: a JSON string (the OpenAI wire form) or an already-parsed object. */
  function: { name: string; arguments: string | Record<string, unknown> };
}

export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; reasoning_content?: string; tool_calls?: ToolCall[] }
  | { role: 'tool'; content: string; tool_call_id?: string; name?: string };

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

/** An OpenAI function tool: `{type: 'function', function: {name, description?, parameters}}`. */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

/**
 * The messages as vLLM's server renders them (vllm/renderers/chat_utils.py `_postprocess_messages`):
 * each assistant tool call's JSON-string arguments parsed into an object (invalid JSON or a
 * non-object becomes `{}`, as vLLM coerces it), an empty `tool_calls` list dropped. transformers'
 * apply_chat_template passes messages as given, so the two render differently whenever a template
 * writes `arguments | tojson` of an object and the string as it is. Floats JS would print
 * differently from Python (1.0) are refused with a PyJsonError rather than rendered wrongly.
 */
export function asVllmRenders(messages: readonly ChatMessage[]): ChatMessage[] {
  return messages.map((m, i) => {
    if (m.role !== 'assistant' || m.tool_calls === undefined) return m;
    const { tool_calls, ...rest } = m;
    if (tool_calls.length === 0) return rest;
    return {
      ...rest,
      tool_calls: tool_calls.map((c, k) => ({ ...c, function: { ...c.function, arguments: argumentsObject(c.function.arguments, `messages[${i}].tool_calls[${k}].function.arguments`) } })),
    };
  });
}

/**
 * The request's tools as vLLM's server hands them to the template (`tool.model_dump()` of its
 * ChatCompletionToolsParam, vllm/entrypoints/openai/chat_completion/protocol.py): `type` and
 * `function` only; in the function `name`, `description` and `parameters` (null when left out), then
 * `strict` and `defer_loading` only when set; other keys dropped. A template that writes
 * `tool | tojson` (Qwen3) writes exactly these keys.
 */
export function asVllmTools(tools: readonly unknown[]): ToolSpec[] {
  return tools.map((t) => {
    const tool = (typeof t === 'object' && t !== null ? t : {}) as Record<string, unknown>;
    const f = (typeof tool.function === 'object' && tool.function !== null ? tool.function : {}) as Record<string, unknown>;
    const defer = tool.defer_loading ?? f.defer_loading;
    const fn = {
      name: f.name,
      description: f.description ?? null,
      parameters: f.parameters ?? null,
      ...(f.strict !== undefined && f.strict !== null ? { strict: f.strict } : {}),
      ...(defer !== undefined && defer !== null ? { defer_loading: defer } : {}),
    };
    return { type: 'function', function: fn, ...(tool.defer_loading !== undefined && tool.defer_loading !== null ? { defer_loading: tool.defer_loading } : {}) } as unknown as ToolSpec;
  });
}

function argumentsObject(args: string | Record<string, unknown>, where: string): Record<string, unknown> {
  if (typeof args !== 'string') return args;
  if (args === '') return {};
  let parsed;
  try {
    parsed = pyJsonLoads(args);
  } catch (err) {
    if (err instanceof PyJsonError) return {};
    throw err;
  }
  return parsed instanceof PyDict ? (pyToJs(parsed, where) as Record<string, unknown>) : {};
}
