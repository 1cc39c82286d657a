/**
 * The recording proxy's memory of agents' conversations for token-in/token-out (upstream-tito.ts):
 * per recorded chat call, the ids the server saw and returned, found again when the agent's next
 * request extends that call's messages by the reply it got.
 *
 * A call is kept under a key of its scope (episode id, agent name, the request fields that change
 * the render: model, tools, chat template and its kwargs) and its messages as the client sent them
 * (canonical JSON: key order and null fields do not count). The next request of the conversation
 * sends those messages again, then the reply as an assistant message, then new messages; its key is
 * made of the messages before that assistant message, and the assistant message must say what the
 * server's reply said: the same content (null and "" alike) and the same tool calls (names, and
 * arguments equal as JSON values). Reasoning is not compared: the kept ids hold the model's thinking
 * as it was generated, whatever the client sends back. Anything else (an edited or reordered history,
 * another system prompt, other tools) has another key, or no matching reply, and is a new
 * conversation.
 *
 * Bounded: least recently used calls are forgotten past a budget of ids (each call counted at its
 * whole prompt and output, an upper bound, as calls of one conversation share their pieces). Safe
 * under concurrent calls: kept calls are never changed, a request takes the one it extends as it
 * was, and several calls kept under one key (n > 1, concurrent requests of the same messages) are
 * all found; a request whose reply matches two of them with different ids is a new conversation,
 * never a guess.
 */
import { createHash } from 'node:crypto';
import type { PromptMessage } from '../timeline/capture';
import { isObject } from './upstream-tokens';

/** The default budget of kept ids (about 16 M numbers; each call counted whole). */
export const KEPT_IDS = 16 << 20;
/** At most this many calls kept under one key (the newest). */
const CALLS_PER_KEY = 16;

/** An assistant message as a later request echoes the reply: its content and tool calls. */
export interface ReplyEcho {
  content: string;
  toolCalls: Array<{ name: string; arguments: unknown }>;
}

export interface KeptCall {
  /** The prompt the server saw, as recorded: pieces whose ids concatenate to its prompt ids. */
  prompt: readonly PromptMessage[];
  /** The model's turn: the server's output ids and its text. */
  output: PromptMessage;
  /** The turn was cut by the length limit: the next delta closes it with the end-of-turn id. */
  cut: boolean;
  /** The reply as the server returned it. */
  reply: ReplyEcho;
}

/** The key of a call: its scope and its messages as the client sent them. */
export function conversationKey(scope: { episode: string; agent: string; render: Record<string, unknown> }, messages: readonly unknown[]): string {
  return createHash('sha256')
    .update(canonical([scope.episode, scope.agent, scope.render, messages]))
    .digest('base64');
}

/** JSON with object keys sorted; with `dropNulls`, null or undefined fields left out (messages), else kept (tool arguments). */
function canonical(v: unknown, dropNulls = true): string {
  if (Array.isArray(v)) return `[${v.map((x) => canonical(x, dropNulls)).join(',')}]`;
  if (isObject(v)) {
    const keys = Object.keys(v)
      .filter((k) => !dropNulls || (v[k] !== null && v[k] !== undefined))
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(v[k], dropNulls)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The content and tool calls of an assistant message (the server's or a client's echo); undefined if it is not one this can compare. */
export function replyEcho(message: unknown): ReplyEcho | undefined {
  if (!isObject(message)) return undefined;
  const c = message.content;
  if (c !== null && c !== undefined && typeof c !== 'string') return undefined;
  const calls = message.tool_calls ?? [];
  if (!Array.isArray(calls)) return undefined;
  const toolCalls: ReplyEcho['toolCalls'] = [];
  for (const call of calls) {
    const f = isObject(call) ? call.function : undefined;
    if (!isObject(f) || typeof f.name !== 'string') return undefined;
    toolCalls.push({ name: f.name, arguments: typeof f.arguments === 'string' ? jsonValue(f.arguments) : { json: f.arguments ?? null } });
  }
  return { content: c ?? '', toolCalls };
}

/** Parsed JSON arguments, or the text itself when it is not JSON (then compared as text). */
function jsonValue(text: string): unknown {
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    return { text };
  }
}

export function sameReply(a: ReplyEcho, b: ReplyEcho): boolean {
  return a.content === b.content && a.toolCalls.length === b.toolCalls.length && a.toolCalls.every((c, i) => c.name === b.toolCalls[i]!.name && canonical(c.arguments, false) === canonical(b.toolCalls[i]!.arguments, false));
}

const idsOf = (call: KeptCall): number => call.prompt.reduce((n, p) => n + p.tokenIds.length, 0) + call.output.tokenIds.length;

/** The ids a kept call ends on: its prompt and output, and whether the turn was cut. */
const idsKey = (call: KeptCall): string => `${call.cut ? 'cut' : 'closed'}:${[...call.prompt.flatMap((p) => p.tokenIds), ...call.output.tokenIds].join(',')}`;

export class KeptChats {
  private readonly map = new Map<string, { calls: KeptCall[]; cost: number }>();
  private size = 0;

  constructor(private readonly budgetIds = KEPT_IDS) {}

  /** The calls kept under `key` (most recently used first in eviction order), or none. */
  find(key: string): readonly KeptCall[] {
    const e = this.map.get(key);
    if (e === undefined) return [];
    this.map.delete(key);
    this.map.set(key, e);
    return e.calls;
  }

  keep(key: string, call: KeptCall): void {
    const old = this.map.get(key);
    const calls = [...(old?.calls ?? []), call].slice(-CALLS_PER_KEY);
    if (old) this.size -= old.cost;
    this.map.delete(key);
    const cost = calls.reduce((n, c) => n + idsOf(c), 0);
    this.map.set(key, { calls, cost });
    this.size += cost;
    for (const [k, e] of this.map) {
      if (this.size <= this.budgetIds) break;
      this.map.delete(k);
      this.size -= e.cost;
    }
  }

  /** How many keys and ids are kept (tests, notices). */
  get stats(): { keys: number; ids: number } {
    return { keys: this.map.size, ids: this.size };
  }
}

/**
 * The one kept call that `echo` is the reply of, among `calls`; undefined when none is, or when
 * several are with different ids (which of them the agent goes on from cannot be known).
 */
export function extendedCall(calls: readonly KeptCall[], echo: ReplyEcho): { call?: KeptCall; ambiguous: boolean } {
  const matching = calls.filter((c) => sameReply(c.reply, echo));
  if (matching.length === 0) return { ambiguous: false };
  const key = idsKey(matching[0]!);
  return matching.every((c) => idsKey(c) === key) ? { call: matching[0], ambiguous: false } : { ambiguous: true };
}
