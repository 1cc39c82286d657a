/**
 * Token-in/token-out in the recording proxy (docs/gateway.md, "Token-in/token-out"): an agent's
 * conversation is sent to the server as the ids it saw and returned, not as messages for it to
 * render again, so a template that rewrites history (Qwen3 dropping earlier thinking, or the empty
 * think block of `enable_thinking: false`) cannot change what the model is shown, and each call's
 * prompt extends the call before: its calls merge into one sample.
 *
 *  - A recorded chat call is kept (kept-chats.ts) with the ids the server saw and returned, when its
 *    turn ended on the end-of-turn id or the length limit and, for the first call of a conversation
 *    (rendered by the server), when this directory's template and tokenizer give exactly the
 *    server's prompt ids for its messages: a directory that is not the served model's is found out
 *    there, and its conversations are forwarded as without token-in/token-out.
 *  - A later request that extends a kept call (its messages, then the reply as the assistant message,
 *    then new messages: tool results, a user message) is sent with
 *    `kv_transfer_params: {prompt_token_ids}` (vLLM ≥ 0.32 takes them as the prompt and renders no
 *    messages; its tool and reasoning parsers still read the output): the kept ids, the turn's
 *    end-of-turn id if it was cut by the length limit, and the new messages rendered as a delta with
 *    the model's template (src/chat/env-delta.ts) and tokenized, the generation prompt included.
 *  - Anything else is a new conversation, forwarded as before: a first call, an edited history,
 *    another system prompt, tools, template or kwargs, a reply that is not the server's, messages
 *    this cannot render as the server does (content parts, other roles), a request that asks for
 *    something else than the next turn (`add_generation_prompt: false`, `continue_final_message`,
 *    `add_special_tokens`, its own `kv_transfer_params`).
 *
 * The template is the request's `chat_template` when it has one (as vLLM uses it), else the
 * directory's; `chat_template_kwargs` and `tools` go to it as vLLM passes them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { asVllmRenders, asVllmTools, ChatTemplate, envDeltaText, trailingTurnText, type ChatMessage, type ChatModel, type RenderChat, type ToolSpec } from '../chat';
import { loadTokenizerDir } from '../model/tokenizer';
import type { PromptMessage } from '../timeline/capture';
import { conversationKey, extendedCall, KeptChats, replyEcho, type KeptCall } from './kept-chats';
import { isObject, type EngineCall, type JsonObject } from './upstream-tokens';

/** Who a call belongs to: the episode (x-episode-id) and agent (x-agent-name) it is recorded under. */
export interface TitoScope {
  episode: string;
  agent: string;
}

/** What token-in/token-out does with one recorded chat request. */
export interface TitoPlan {
  /** The key the request's calls are kept under; undefined when they cannot be kept. */
  key?: string;
  /** The request extends a kept call: the ids to send as its prompt, the recorded pieces they begin with, and the delta after them. */
  extends?: { promptIds: number[]; kept: PromptMessage[]; delta: number[] };
  /** Why the request is not kept, or not sent token-in (a notice, said once per kind). */
  why?: { kind: string; text: string };
}

/** The request fields that change how the server renders a chat: calls differing in them are different conversations. */
const RENDER_FIELDS = ['model', 'tools', 'chat_template', 'chat_template_kwargs'] as const;
/** Request fields that ask for something else than the next turn of the conversation as the server holds it. */
const NOT_NEXT_TURN: Array<[string, (v: unknown) => boolean]> = [
  ['add_generation_prompt', (v) => v === false],
  ['continue_final_message', (v) => v === true],
  ['add_special_tokens', (v) => v === true],
  ['kv_transfer_params', (v) => v !== undefined && v !== null],
];

/** Loads the served model's tokenizer directory; throws naming `what` (the flag or option) and what is wrong. */
export function loadTokenInTokenOut(dir: string, what: string, budgetIds?: number): TokenInTokenOut {
  const fail = (why: string) => new Error(`${what} ${JSON.stringify(dir)}: ${why}; token-in/token-out needs the served model's tokenizer directory (tokenizer.json, and tokenizer_config.json with its chat_template and eos_token)`);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw fail('no such directory');
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) if (!fs.existsSync(path.join(dir, f))) throw fail(`it has no ${f}`);
  let model: ChatModel;
  try {
    model = { template: ChatTemplate.fromDir(dir), tokenizer: loadTokenizerDir(dir) };
    // A template that does not end an assistant turn with the end-of-turn token has no delta to render.
    trailingTurnText((m, g) => model.template.render(m, { addGenerationPrompt: g }), model.tokenizer.eosToken);
  } catch (err) {
    throw fail(err instanceof Error ? err.message : String(err));
  }
  return new TokenInTokenOut(model, budgetIds);
}

export class TokenInTokenOut {
  private readonly kept: KeptChats;
  /** Request templates (`chat_template`), compiled once each; a few at most. */
  private readonly templates = new Map<string, ChatTemplate>();

  constructor(
    readonly model: ChatModel,
    budgetIds?: number,
  ) {
    this.kept = new KeptChats(budgetIds);
  }

  /** How many conversations' calls and ids are kept. */
  get stats(): { keys: number; ids: number } {
    return this.kept.stats;
  }

  plan(scope: TitoScope, body: JsonObject): TitoPlan {
    const raw = Array.isArray(body.messages) ? body.messages : [];
    for (const [field, asks] of NOT_NEXT_TURN) {
      if (asks(body[field])) return { why: { kind: `field-${field}`, text: `a request with ${field} ${JSON.stringify(body[field])} is forwarded as it came and its conversation not kept token-in/token-out` } };
    }
    const messages = serverMessages(raw);
    if (typeof messages === 'string') return { why: { kind: 'messages', text: `${messages}: such a conversation is forwarded for the server to render, not kept token-in/token-out` } };
    const render: JsonObject = {};
    for (const f of RENDER_FIELDS) if (body[f] !== undefined) render[f] = body[f];
    const keyScope = { ...scope, render };
    const key = conversationKey(keyScope, raw);
    let k = raw.length - 1;
    while (k >= 0 && !(isObject(raw[k]) && (raw[k] as JsonObject).role === 'assistant')) k--;
    if (k <= 0 || k === raw.length - 1) return { key };
    const echo = replyEcho(raw[k]);
    if (echo === undefined) return { key };
    const { call, ambiguous } = extendedCall(this.kept.find(conversationKey(keyScope, raw.slice(0, k))), echo);
    if (ambiguous) return { key, why: { kind: 'ambiguous', text: 'a reply matched two kept calls with different ids (the same messages sent twice, or n > 1, and the same reply): which one the agent goes on from cannot be known, so its conversation starts anew' } };
    if (call === undefined) return { key };
    let delta: number[];
    try {
      const text = envDeltaText(this.renderer(body), this.model.tokenizer.eosToken, messages[k], messages.slice(k + 1));
      delta = [...(call.cut ? [this.model.tokenizer.eosId] : []), ...this.model.tokenizer.encode(text)];
    } catch (err) {
      return { key, why: { kind: 'delta', text: `the new messages could not be rendered as a delta (${err instanceof Error ? err.message : String(err)}); the conversation is forwarded for the server to render` } };
    }
    const kept = [...call.prompt, call.output];
    return { key, extends: { promptIds: [...kept.flatMap((p) => p.tokenIds), ...delta], kept, delta } };
  }

  /**
   * Keeps a call of a planned request: `prompt` is its prompt as recorded, `text` its output's text,
   * `extended` whether the server took the planned ids. Returns why it was not kept, if it was not.
   */
  keep(plan: TitoPlan, body: JsonObject, call: EngineCall, prompt: readonly PromptMessage[], text: string, extended: boolean): TitoPlan['why'] {
    if (plan.key === undefined) return undefined;
    const ids = call.tokenIds;
    const cut = call.finishReason === 'length';
    if (!cut && ids.at(-1) !== this.model.tokenizer.eosId) {
      return { kind: 'turn-end', text: `a turn that ended on neither the end-of-turn id ${this.model.tokenizer.eosId} nor the length limit (finish_reason ${JSON.stringify(call.finishReason ?? null)}) is not kept: the next request of its conversation is rendered by the server` };
    }
    const reply = replyEcho(call.message);
    if (reply === undefined) return { kind: 'reply', text: "a call whose reply has no readable content or tool calls is not kept" };
    if (!extended) {
      const why = this.firstCallCheck(body, call.promptTokenIds);
      if (why !== undefined) return why;
    }
    const kept: KeptCall = { prompt, output: { text, tokenIds: ids }, cut, reply };
    this.kept.keep(plan.key, kept);
    return undefined;
  }

  /** A conversation the server rendered is kept only if this directory renders its messages to the same ids. */
  private firstCallCheck(body: JsonObject, serverIds: readonly number[]): TitoPlan['why'] {
    const messages = serverMessages(Array.isArray(body.messages) ? body.messages : []);
    let ours: number[] = [];
    try {
      if (typeof messages !== 'string') ours = this.model.tokenizer.encode(this.renderer(body)(messages, true));
    } catch (err) {
      return { kind: 'render', text: `the tokenizer directory's template could not render a request (${err instanceof Error ? err.message : String(err)}); its conversation is forwarded for the server to render` };
    }
    if (ours.length === serverIds.length && ours.every((id, i) => id === serverIds[i])) return undefined;
    return {
      kind: 'first-render',
      text: `the tokenizer directory's template and tokenizer give other prompt ids (${ours.length}) than the server's (${serverIds.length}) for a conversation's first call: is it the served model's directory, and does the server render with its template (no --chat-template, --default-chat-template-kwargs)? Such conversations are forwarded for the server to render`,
    };
  }

  /** The request's render: its `chat_template` (as vLLM uses it) or the directory's, its tools and kwargs as vLLM passes them. */
  private renderer(body: JsonObject): RenderChat {
    const template = typeof body.chat_template === 'string' ? this.requestTemplate(body.chat_template) : this.model.template;
    const tools: ToolSpec[] | undefined = Array.isArray(body.tools) ? asVllmTools(body.tools) : undefined;
    const kwargs = isObject(body.chat_template_kwargs) ? body.chat_template_kwargs : undefined;
    return (messages, addGenerationPrompt) => template.render(asVllmRenders(messages), { tools, kwargs, addGenerationPrompt });
  }

  private requestTemplate(source: string): ChatTemplate {
    let t = this.templates.get(source);
    if (t === undefined) {
      t = new ChatTemplate({ ...this.model.template.config, chat_template: source });
      if (this.templates.size >= 8) this.templates.delete(this.templates.keys().next().value!);
      this.templates.set(source, t);
    }
    return t;
  }
}

/**
 * The messages as vLLM's server hands them to the template (vllm/renderers/chat_utils.py
 * `_parse_chat_message_content`): role and text content, an assistant's tool calls and `reasoning`
 * (also as `reasoning_content`), a tool message's `tool_call_id`, a `name`. Content parts, null
 * content other than an assistant's, and roles other than system, user, assistant and tool are not
 * rendered here: a string saying which message.
 */
export function serverMessages(raw: readonly unknown[]): ChatMessage[] | string {
  const out: ChatMessage[] = [];
  for (const [i, m] of raw.entries()) {
    if (!isObject(m) || typeof m.role !== 'string') return `messages[${i}] is not a message`;
    const { role } = m;
    if (role !== 'system' && role !== 'user' && role !== 'assistant' && role !== 'tool') return `messages[${i}] has role ${JSON.stringify(role)}`;
    const content = m.content ?? (role === 'assistant' ? '' : undefined);
    if (typeof content !== 'string') return `messages[${i}] has content that is not a text`;
    const msg: Record<string, unknown> = { role, content };
    if (role === 'assistant' && Array.isArray(m.tool_calls)) msg.tool_calls = m.tool_calls;
    if (role === 'assistant' && typeof m.reasoning === 'string') Object.assign(msg, { reasoning: m.reasoning, reasoning_content: m.reasoning });
    if (role === 'tool' && typeof m.tool_call_id === 'string') msg.tool_call_id = m.tool_call_id;
    if (typeof m.name === 'string') msg.name = m.name;
    out.push(msg as ChatMessage);
  }
  return out;
}
