/**
 * An arithmetic agent written only against the official `openai` client, as outside code would be:
 * it asks the model to evaluate an expression, runs the calculator itself whenever the model calls
 * it, and returns the model's final answer. Used by `npm run agent` and by agent-episode activities.
 *
 * Two formats, one loop (the `calc` tool offered as an OpenAI function either way, the task's
 * CHAT_TOOLS; its tool messages are the chat episodes' own, chatToolAnswer):
 *  - plan-act: the gateway on the embedded policy, which writes the Plan/Act protocol behind the
 *    OpenAI API; the question is the actor's prompt, the reply is sent back as it came.
 *  - chat: a model with its own chat template and tool-call parser (vLLM with
 *    `--enable-auto-tool-choice --tool-call-parser hermes`, behind the recording proxy), playing the
 *    episode chat SFT taught (src/tasks/arith/chat-sft.ts): the same first messages
 *    (chatProblemMessages) and tools, rendered with the run's `chat_template_kwargs` (Qwen3's
 *    enable_thinking), the same tool messages. The reply goes back as the fields a chat template
 *    renders (role, content, tool_calls), so the history the server renders is the turn it returned
 *    and nothing of vLLM's response fields; the answer is the content after any `<think>...</think>`
 *    the model wrote (a server without a reasoning parser leaves it in the content). A turn whose
 *    `<tool_call>` the server could not parse (vLLM returns it as content) is answered as the chat
 *    episodes answer it (unreadableCallMessage) and the model may retry; the result counts them.
 */
import OpenAI from 'openai';
import { parseModelTurn } from '../chat';
import { CALC_TOOL_NAME, calcOrRefusal, CHAT_TOOLS, chatProblemMessages, chatToolAnswer, unreadableCallMessage } from '../tasks/arith/chat-episode';
import { arithActorPrompt } from '../tasks/arith/formats';

export interface AgentAnswer {
  /** The model's last text, trimmed; null when it never answered within maxCalls tool calls. */
  answer: string | null;
  /** Chat requests the episode made. */
  requests: number;
  /** chat: turns whose `<tool_call>` the server could not parse (answered, as the chat episodes answer them, with a retry message). */
  unreadableToolCalls?: number;
}

/** How the model behind the base URL speaks (see the file's comment); default plan-act. */
export type AgentFormat = 'plan-act' | 'chat';
export const AGENT_FORMATS: readonly AgentFormat[] = ['plan-act', 'chat'];

export interface SolveOptions {
  model: string;
  format?: AgentFormat;
  /** Sent as x-episode-id: the gateway records the episode's calls under it. */
  episodeId: string;
  maxCalls?: number;
  temperature?: number;
  /** Nucleus sampling's top_p; left out of the request when absent (the server's default, 1). */
  topP?: number;
  maxTokens?: number;
  seed?: number;
  /** chat: the request's `chat_template_kwargs` (vLLM's; e.g. Qwen3's `{"enable_thinking": false}`), sent on every call. */
  chatTemplateKwargs?: Record<string, unknown>;
}

export async function solveArithmetic(client: OpenAI, expression: string, o: SolveOptions): Promise<AgentAnswer> {
  const chat = o.format === 'chat';
  // src/chat's messages are the OpenAI request's (what a chat template renders), typed on their own.
  const messages = (chat ? chatProblemMessages(expression) : [{ role: 'user', content: arithActorPrompt(expression) }]) as OpenAI.ChatCompletionMessageParam[];
  const maxCalls = o.maxCalls ?? 3;
  let unreadable = 0;
  const counted = (a: AgentAnswer): AgentAnswer => (chat ? { ...a, unreadableToolCalls: unreadable } : a);
  for (let call = 0; call <= maxCalls; call++) {
    const request: OpenAI.ChatCompletionCreateParamsNonStreaming = {
      model: o.model,
      messages,
      tools: CHAT_TOOLS as OpenAI.ChatCompletionTool[],
      temperature: o.temperature ?? 0,
      ...(o.topP !== undefined ? { top_p: o.topP } : {}),
      max_tokens: o.maxTokens ?? 32,
      ...(o.seed !== undefined ? { seed: o.seed + call } : {}),
    };
    // vLLM's own request field: the client sends the body's keys as they are.
    const body = chat && o.chatTemplateKwargs ? Object.assign(request, { chat_template_kwargs: o.chatTemplateKwargs }) : request;
    const r = await client.chat.completions.create(body, { headers: { 'x-episode-id': o.episodeId } });
    const choice = r.choices[0]!;
    const msg = choice.message;
    messages.push(chat ? asHistory(msg) : msg);
    const problem = chat && !msg.tool_calls?.length ? unreadableCall(msg.content, choice.finish_reason) : undefined;
    if (problem !== undefined) {
      // vLLM returns a turn whose call does not parse as content; the chat episodes answer it and go on.
      unreadable++;
      messages.push({ role: 'user', content: unreadableCallMessage(problem) });
      continue;
    }
    if (!msg.tool_calls?.length) return counted({ answer: (chat ? afterThinking(msg.content) : msg.content)?.trim() ?? null, requests: call + 1 });
    for (const tc of msg.tool_calls) {
      if (tc.type !== 'function') continue;
      messages.push({ role: 'tool', tool_call_id: tc.id, content: await chatToolAnswer(tc.function, calcOrRefusal) });
    }
  }
  return counted({ answer: null, requests: maxCalls + 1 });
}

/** Why a chat reply's content holds a `<tool_call>` the server did not return as a call, read as vLLM's hermes parser reads it; undefined when it holds none. */
function unreadableCall(content: string | null, finishReason: string) {
  if (content === null) return undefined;
  return parseModelTurn(content, { tools: [CALC_TOOL_NAME], finishReason }).malformed.find((m) => m.kind !== 'unknown-tool')?.kind;
}

/** A chat model's reply as the next request's history: only what its chat template renders. */
function asHistory(msg: OpenAI.ChatCompletionMessage): OpenAI.ChatCompletionAssistantMessageParam {
  const calls = (msg.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } }] : []));
  return { role: 'assistant', content: msg.content, ...(calls.length ? { tool_calls: calls } : {}) };
}

/** The text after the last `</think>` (the whole text when there is none). */
function afterThinking(content: string | null): string | null {
  if (content === null) return null;
  const end = content.lastIndexOf('</think>');
  return end < 0 ? content : content.slice(end + '</think>'.length);
}
