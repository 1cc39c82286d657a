/**
 * A multi-turn chat kept as the exact ids the engine saw (token-in/token-out): the first prompt
 * rendered and tokenized once; each model turn appended as the ids the engine returned (trained);
 * each environment turn (tool results, a user message) rendered as a delta and appended (not trained).
 * History is never re-rendered or re-tokenized, so a template that rewrites earlier turns (Qwen3
 * dropping their thinking) or a tokenizer that would split the model's text differently cannot
 * shift what was trained. checkConversation says where a full render would differ.
 *
 * The delta (env-delta.ts) is verl's idea, made exact for the text between turns.
 */
import type { TextTokenizer } from '../model/tokenizer-types';
import { loadTokenizerDir } from '../model/tokenizer';
import { parseModelTurn, type ParsedTurn } from './hermes';
import { asVllmRenders, type AssistantMessage, type ChatMessage, type ToolSpec } from './messages';
import { ConversationError, envDeltaText, trailingTurnText } from './env-delta';
import { ChatTemplate } from './template';

export { ConversationError } from './env-delta';

/** A model directory's template and tokenizer. */
export interface ChatModel {
  template: ChatTemplate;
  tokenizer: TextTokenizer;
}

export function loadChatModel(dir: string): ChatModel {
  return { template: ChatTemplate.fromDir(dir), tokenizer: loadTokenizerDir(dir) };
}

export interface ConversationOptions {
  tools?: readonly ToolSpec[];
  /** Passed to the template and to the reasoning parser (left out: the template's default). */
  enableThinking?: boolean;
  /** The server's --reasoning-parser that model turns are read with; left out, none (all text is content). */
  reasoningParser?: 'qwen3';
}

/** Where each run of ids came from: the first prompt, an environment delta, or a model turn. */
export interface IdSpan {
  source: 'prompt' | 'env' | 'model';
  start: number;
  end: number;
}

/** A conversation's whole state as JSON: stored between two chat-turn activities and given back by restore(). */
export interface TokenConversationSnapshot {
  ids: number[];
  modelMask: number[];
  spans: IdSpan[];
  messages: ChatMessage[];
  turns: ParsedTurn[];
  pending: ChatMessage[];
  awaitingModel: boolean;
}

export class TokenConversation {
  readonly ids: number[] = [];
  /** 1 where the model wrote the id (trained as generated), 0 for prompt and environment ids. */
  readonly modelMask: number[] = [];
  readonly spans: IdSpan[] = [];
  /** The conversation as messages, model turns as vLLM's server would return them. */
  readonly messages: ChatMessage[];
  /** Each model turn's parse (its tool calls, and the malformed ones counted). */
  readonly turns: ParsedTurn[] = [];
  private pending: ChatMessage[] = [];
  private awaitingModel = false;

  constructor(
    readonly model: ChatModel,
    initial: readonly ChatMessage[],
    readonly opts: ConversationOptions = {},
  ) {
    this.messages = [];
    this.pending = [...initial];
  }

  snapshot(): TokenConversationSnapshot {
    return { ids: [...this.ids], modelMask: [...this.modelMask], spans: this.spans.map((x) => ({ ...x })), messages: [...this.messages], turns: [...this.turns], pending: [...this.pending], awaitingModel: this.awaitingModel };
  }

  /** The conversation a snapshot was taken of (the same model and options), to go on from. */
  static restore(model: ChatModel, s: TokenConversationSnapshot, opts: ConversationOptions = {}): TokenConversation {
    const conv = new TokenConversation(model, s.pending, opts);
    conv.ids.push(...s.ids);
    conv.modelMask.push(...s.modelMask);
    conv.spans.push(...s.spans);
    conv.messages.push(...s.messages);
    conv.turns.push(...s.turns);
    conv.awaitingModel = s.awaitingModel;
    return conv;
  }

  /** Renders the messages as the server does (vLLM parses JSON-string tool-call arguments). */
  render(messages: readonly ChatMessage[], addGenerationPrompt: boolean): string {
    return this.model.template.render(asVllmRenders(messages), { tools: this.opts.tools, enableThinking: this.opts.enableThinking, addGenerationPrompt });
  }

  /** The ids to generate from: the pending messages appended (rendered once), then the generation prompt. */
  nextPrompt(): number[] {
    if (this.awaitingModel) throw new ConversationError('prompt-not-taken', 'the last prompt has no model turn yet: add it before asking for the next prompt');
    if (this.pending.length === 0) throw new ConversationError('no-pending-messages', 'no new messages since the last model turn: add a tool result or a user message');
    const first = this.ids.length === 0;
    const text = first ? this.render(this.pending, true) : this.envDelta(this.pending);
    this.append(this.model.tokenizer.encode(text), first ? 'prompt' : 'env');
    this.messages.push(...this.pending);
    this.pending = [];
    this.awaitingModel = true;
    return [...this.ids];
  }

  /**
   * The engine's ids for the turn, appended as they are and marked as the model's. A turn cut by the
   * length limit gets the end-of-turn id appended as environment (mask 0), so the next delta follows a
   * closed turn, as the server's render of the history would close it.
   */
  addModelTurn(ids: readonly number[], finishReason: 'stop' | 'length' | string = 'stop'): ParsedTurn {
    if (!this.awaitingModel) throw new ConversationError('no-pending-messages', 'a model turn needs a prompt first: call nextPrompt()');
    this.append(ids, 'model');
    const eos = this.model.tokenizer.eosId;
    const closed = ids.length > 0 && ids[ids.length - 1] === eos;
    if (!closed) this.append([eos], 'env');
    const text = this.model.tokenizer.decode(closed ? ids.slice(0, -1) : [...ids]);
    const parsed = parseModelTurn(text, {
      reasoningParser: this.opts.reasoningParser,
      thinking: this.opts.enableThinking !== false,
      tools: this.opts.tools?.map((t) => t.function.name),
      finishReason,
    });
    this.turns.push(parsed);
    this.messages.push(assistantMessage(parsed, this.turns.length));
    this.awaitingModel = false;
    return parsed;
  }

  /** Whether the ids end with a model turn (else with a prompt awaiting one, or nothing). */
  get endsWithModelTurn(): boolean {
    return !this.awaitingModel && this.turns.length > 0;
  }

  /** Environment messages (tool results, a user message), rendered together at the next prompt. */
  addMessages(...messages: ChatMessage[]): void {
    this.pending.push(...messages);
  }

  private append(ids: readonly number[], source: IdSpan['source']): void {
    const start = this.ids.length;
    for (const id of ids) {
      this.ids.push(id);
      this.modelMask.push(source === 'model' ? 1 : 0);
    }
    this.spans.push({ source, start, end: this.ids.length });
  }

  /** The text the template puts after the last model turn's end-of-turn token for these messages (env-delta.ts). */
  private envDelta(messages: readonly ChatMessage[]): string {
    return envDeltaText((m, g) => this.render(m, g), this.model.tokenizer.eosToken, this.messages.at(-1), messages);
  }

  /** The text a template puts after an assistant turn's end-of-turn token when nothing follows (ChatML: "\n"). */
  trailingText(): string {
    return trailingTurnText((m, g) => this.render(m, g), this.model.tokenizer.eosToken);
  }
}

/** The message vLLM's server returns for a parsed turn (ids call_<turn>_<n>, arguments as JSON text). */
function assistantMessage(parsed: ParsedTurn, turn: number): AssistantMessage {
  return {
    role: 'assistant',
    content: parsed.content ?? '',
    ...(parsed.reasoning === null ? {} : { reasoning_content: parsed.reasoning }),
    ...(parsed.toolCalls.length === 0 ? {} : { tool_calls: parsed.toolCalls.map((c, n) => ({ id: `call_${turn}_${n}`, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })) }),
  };
}
