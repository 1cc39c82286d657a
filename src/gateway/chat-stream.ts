/**
 * Streaming a chat completion token by token, in OpenAI's server-sent chunk format. Each choice's
 * text goes out as its tokens are sampled, except what may still turn out not to be content: the
 * start of a stop string or of a calculator call (it becomes a tool call at the end) and a partial
 * UTF-8 character are held back until the next token decides them. When a choice ends, the rest of
 * its final message (and its tool call) follows, so the deltas always add up to the message the
 * non-streamed response would hold.
 */
import type { ServerResponse } from 'node:http';
import type { TextTokenizer } from '../model/tokenizer-types';
import { decodeWhole } from '../model/whole-characters';
import type { AssistantTurn } from './chat-template';
import { GatewayError } from './errors';

export interface ChatStreamInit {
  id: string;
  created: number;
  model: string;
  n: number;
  tokenizer: TextTokenizer;
  /** Texts that end visible content where they begin (stop strings, the calculator's opening tag). */
  holds: readonly string[];
  logprobs: boolean;
  /** Per token: its logprob entry as the non-streamed response writes it. */
  logprobOf: (tokenId: number, logprob: number, top: ReadonlyArray<{ id: number; logprob: number }>) => unknown;
}

interface ChoiceState {
  ids: number[];
  lps: number[];
  tops: Array<ReadonlyArray<{ id: number; logprob: number }>>;
  /** Characters of the content already sent. */
  sent: number;
  /** Tokens whose logprobs are not sent yet. */
  unsentFrom: number;
  /** A hold string was reached: nothing more is sent before the end. */
  held: boolean;
}

export class ChatStream {
  private readonly choices: ChoiceState[];
  private readonly base: { id: string; object: 'chat.completion.chunk'; created: number; model: string };

  constructor(
    private readonly raw: ServerResponse,
    private readonly init: ChatStreamInit,
  ) {
    this.base = { id: init.id, object: 'chat.completion.chunk', created: init.created, model: init.model };
    this.choices = Array.from({ length: init.n }, () => ({ ids: [], lps: [], tops: [], sent: 0, unsentFrom: 0, held: false }));
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    for (let k = 0; k < init.n; k++) this.send([{ index: k, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }]);
  }

  /** A token of choice k was sampled. */
  token(k: number, tokenId: number, logprob: number, top: ReadonlyArray<{ id: number; logprob: number }> = []): void {
    const c = this.choices[k]!;
    c.ids.push(tokenId);
    c.lps.push(logprob);
    c.tops.push(top);
    // The end-of-sequence token is no content (its logprob goes out with the finish chunk).
    if (c.held || tokenId === this.init.tokenizer.eosId) return;
    // A token that ends inside a UTF-8 character decodes to U+FFFD until the rest of it arrives: that
    // is no text yet, neither to send nor to hold against (a stop string's last character may be it).
    const text = decodeWhole(this.init.tokenizer, c.ids);
    let safe = text.length;
    for (const h of this.init.holds) {
      const at = text.indexOf(h, c.sent);
      if (at >= 0 && at < safe) {
        safe = at;
        c.held = true;
      }
    }
    if (!c.held) safe -= heldSuffix(text, this.init.holds);
    if (safe > c.sent) this.content(k, text.slice(c.sent, safe));
  }

  /** Choice k's final message: what was not sent of its content, its tool calls, its finish reason. */
  finish(k: number, turn: AssistantTurn): void {
    const c = this.choices[k]!;
    const content = turn.content ?? '';
    if (content.length > c.sent) this.content(k, content.slice(c.sent));
    if (turn.tool_calls) {
      this.send([{ index: k, delta: { tool_calls: turn.tool_calls.map((t, i) => ({ index: i, ...t })) }, logprobs: this.pendingLogprobs(k), finish_reason: null }]);
    }
    this.send([{ index: k, delta: {}, logprobs: this.pendingLogprobs(k), finish_reason: turn.finish_reason }]);
  }

  end(usage?: object): void {
    if (usage) this.send([], usage);
    this.raw.write('data: [DONE]\n\n');
    this.raw.end();
  }

  /** An error after the headers went out: OpenAI's error object as the last event (vLLM does the same). */
  fail(err: unknown): void {
    const e = err instanceof GatewayError ? err : new GatewayError(500, `internal error: ${err instanceof Error ? err.message : String(err)}`, 'server_error');
    if (!this.raw.writableEnded) {
      this.raw.write(`data: ${JSON.stringify(e.toJSON())}\n\n`);
      this.end();
    }
  }

  private content(k: number, text: string): void {
    this.choices[k]!.sent += text.length;
    this.send([{ index: k, delta: { content: text }, logprobs: this.pendingLogprobs(k), finish_reason: null }]);
  }

  private pendingLogprobs(k: number): { content: unknown[] } | null {
    const c = this.choices[k]!;
    if (!this.init.logprobs || c.unsentFrom >= c.ids.length) return null;
    const content = c.ids.slice(c.unsentFrom).map((t, i) => this.init.logprobOf(t, c.lps[c.unsentFrom + i]!, c.tops[c.unsentFrom + i]!));
    c.unsentFrom = c.ids.length;
    return { content };
  }

  private send(choices: unknown[], usage?: object): void {
    if (!this.raw.writableEnded) this.raw.write(`data: ${JSON.stringify({ ...this.base, choices, ...(usage ? { usage } : {}) })}\n\n`);
  }
}

/** Length of the longest end of `text` that begins one of `holds` (it may become one with more tokens). */
function heldSuffix(text: string, holds: readonly string[]): number {
  let longest = 0;
  for (const h of holds) {
    for (let n = Math.min(h.length - 1, text.length); n > longest; n--) {
      if (text.endsWith(h.slice(0, n))) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}
