/**
 * Random multi-turn episodes played through a TokenConversation with a scripted "engine": each model
 * turn is text the model could write in the template's own format (Qwen3: a <think> block unless
 * thinking is off, content, Hermes tool calls; ChatML: content), returned as ids ending in the
 * end-of-turn id; tool calls are answered by consecutive tool messages, other turns by a user message.
 */
import { formatHermesToolCalls, TokenConversation, type ChatMessage, type ChatModel, type ConversationOptions } from '../../src/chat';
import { mulberry32, pick, randInt } from '../../src/domain/rng';
import { CALC_TOOL, SEARCH_TOOL, words } from './random-chats';

export interface ScriptedTurn {
  /** Index of the turn's assistant message in conv.messages, and its id span. */
  messageIndex: number;
  span: [number, number];
  reasoning: string | null;
  content: string;
  calls: number;
}

export interface Episode {
  template: 'qwen3' | 'chatml';
  opts: ConversationOptions;
  conv: TokenConversation;
  turns: ScriptedTurn[];
}

export function randomEpisode(seed: number, models: Record<'qwen3' | 'chatml', ChatModel>): Episode {
  const rng = mulberry32(seed);
  const template = rng() < 0.7 ? 'qwen3' : 'chatml';
  const thinkingDraw = rng();
  const opts: ConversationOptions =
    template === 'chatml'
      ? {}
      : {
          reasoningParser: 'qwen3',
          ...(rng() < 0.8 ? { tools: rng() < 0.5 ? [CALC_TOOL] : [CALC_TOOL, SEARCH_TOOL] } : {}),
          ...(thinkingDraw < 0.3 ? {} : { enableThinking: thinkingDraw < 0.7 }),
        };
  const model = models[template];
  const initial: ChatMessage[] = [];
  if (rng() < 0.5) initial.push({ role: 'system', content: pick(rng, ['You are the actor. Use the calculator.', words(rng)]) });
  initial.push({ role: 'user', content: words(rng) });
  const conv = new TokenConversation(model, initial, opts);
  const turns: ScriptedTurn[] = [];
  const nTurns = randInt(rng, 1, 4);
  for (let t = 0; t < nTurns; t++) {
    conv.nextPrompt();
    const thinks = template === 'qwen3' && opts.enableThinking !== false;
    const reasoning = thinks ? (rng() < 0.3 ? '' : words(rng, 6)) : null;
    const content = rng() < 0.3 && opts.tools ? '' : words(rng, 8);
    const nCalls = opts.tools ? pick(rng, [0, 1, 1, 2, 3]) : 0;
    const calls = Array.from({ length: nCalls }, (_, k) => ({ name: k % 2 === 0 ? 'calc' : 'search', arguments: { expression: `${randInt(rng, 1, 99)} * ${k}` } }));
    const callText = formatHermesToolCalls(calls);
    const body = nCalls === 0 ? content : content === '' ? callText : `${content}\n${callText}`;
    const text = (reasoning === null ? '' : `<think>\n${reasoning}\n</think>\n\n`) + body;
    const ids = [...model.tokenizer.encode(text), model.tokenizer.eosId];
    const start = conv.ids.length;
    conv.addModelTurn(ids, 'stop');
    turns.push({ messageIndex: conv.messages.length - 1, span: [start, start + ids.length], reasoning, content, calls: nCalls });
    if (t === nTurns - 1 && rng() < 0.5) break; // end on the model's turn
    if (nCalls > 0) conv.addMessages(...calls.map((c, k): ChatMessage => ({ role: 'tool', tool_call_id: `call_${t + 1}_${k}`, name: c.name, content: words(rng, 3) })));
    else conv.addMessages({ role: 'user', content: `Actor report: ${words(rng)}` });
    if (t === nTurns - 1) conv.nextPrompt(); // end on a prompt awaiting the model
  }
  return { template, opts, conv, turns };
}
