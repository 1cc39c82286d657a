/**
 * Environment turns rendered as a delta (token-in/token-out): the text a chat template writes for new
 * messages (tool results, a user message) after a model turn, without rendering the history again.
 *
 * verl's idea (agent_loop/tool_agent_loop.py), made exact for the text between turns: the new
 * messages are rendered after a fixed base conversation [user, assistant], and the delta is
 * everything after the base assistant's end-of-turn token — ChatML's "\n" after <|im_end|> included,
 * which the engine's output (ending at <|im_end|>) does not hold. The base assistant carries the last
 * turn's tool calls (templates may pair results with calls) but a marker for content, which locates
 * the end of its turn in the render. Used by TokenConversation and by the recording proxy, which
 * keeps an agent's conversation as the ids the server saw (src/gateway/upstream-tito.ts).
 */
import type { ChatMessage } from './messages';

/** The template's text for these messages, as the server renders them (the caller's template, tools and kwargs). */
export type RenderChat = (messages: readonly ChatMessage[], addGenerationPrompt: boolean) => string;

export class ConversationError extends Error {
  constructor(
    readonly kind: 'no-pending-messages' | 'prompt-not-taken' | 'delta-not-found',
    message: string,
  ) {
    super(message);
    this.name = 'ConversationError';
  }
}

const BASE_USER = 'durable-rl base user 5c1e';
const BASE_ASSISTANT = 'durable-rl base assistant 9a7f';

/**
 * The text after a model turn's end-of-turn token `eosToken` for `messages`, then the generation
 * prompt. `last` is the conversation's last message (its tool calls, if an assistant's, go to the
 * base assistant). Throws ConversationError 'delta-not-found' for a template that does not end an
 * assistant turn with `eosToken`.
 */
export function envDeltaText(render: RenderChat, eosToken: string, last: ChatMessage | undefined, messages: readonly ChatMessage[]): string {
  const calls = last?.role === 'assistant' && last.tool_calls !== undefined ? { tool_calls: last.tool_calls } : {};
  return afterBaseTurn(render, eosToken, [{ role: 'assistant', content: BASE_ASSISTANT, ...calls }, ...messages], true);
}

/** The text a template puts after an assistant turn's end-of-turn token when nothing follows (ChatML: "\n"). */
export function trailingTurnText(render: RenderChat, eosToken: string): string {
  return afterBaseTurn(render, eosToken, [{ role: 'assistant', content: BASE_ASSISTANT }], false);
}

/**
 * The render of [base user, ...rest] after the base assistant's end-of-turn token: found after the
 * assistant's marker, or, for a template that does not write that content, as the first
 * end-of-turn token past those of the base user's own render.
 */
function afterBaseTurn(render: RenderChat, eos: string, rest: readonly ChatMessage[], addGenerationPrompt: boolean): string {
  const user: ChatMessage = { role: 'user', content: BASE_USER };
  const text = render([user, ...rest], addGenerationPrompt);
  const marker = text.indexOf(BASE_ASSISTANT);
  let end = -1;
  if (marker >= 0) end = text.indexOf(eos, marker + BASE_ASSISTANT.length);
  else {
    const before = render([user], false).split(eos).length - 1;
    for (let n = 0, at = -1; n <= before; n++) {
      at = text.indexOf(eos, at + 1);
      end = at;
      if (at < 0) break;
    }
  }
  if (end < 0) {
    throw new ConversationError('delta-not-found', `the template does not end an assistant turn with the tokenizer's end-of-turn token ${JSON.stringify(eos)}`);
  }
  return text.slice(end + eos.length);
}
