/**
 * Deterministic random conversations for the parity tests: tools on and off, parallel and
 * consecutive tool calls, empty and non-empty thinking (as reasoning_content or inline <think>),
 * and Plan/Act-shaped chats where a planner and an actor exchange turns.
 */
import { mulberry32, pick, randInt, type Rng } from '../../src/domain/rng';
import type { ChatMessage, ToolCall, ToolSpec } from '../../src/chat';

export const CALC_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'calc', description: 'Evaluate an arithmetic expression.', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } },
};
export const SEARCH_TOOL: ToolSpec = {
  type: 'function',
  function: { name: 'search', description: 'Search notes – unicode “quotes” é.', parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } } } },
};

const WORDS = ['12', '+', '7', 'plan', 'the', 'answer', 'is', 'é', '中文', '😀', '"quoted"', 'back\\slash', '<b>', 'x=3', '  ', '\t', 'Step', '1.', '-5', '3.25'];

export function text(rng: Rng, max = 12): string {
  const n = randInt(rng, 0, max);
  let out = '';
  for (let i = 0; i < n; i++) out += pick(rng, WORDS) + pick(rng, [' ', ' ', ' ', '\n', '', '\n\n']);
  return out;
}

/** Non-empty text that does not start or end with a newline (the model-written parts of turns). */
export function words(rng: Rng, max = 10): string {
  const t = text(rng, max).trim();
  return t === '' ? 'ok' : t;
}

function argsValue(rng: Rng): unknown {
  return pick(rng, [
    () => ({ expression: `${randInt(rng, 0, 99)} + ${randInt(rng, 0, 99)}` }),
    () => ({ query: words(rng, 3), limit: randInt(rng, 1, 5) }),
    () => ({ nested: { a: [1, 2.5, 'é', null, true] }, b: -3 }),
    () => ({}),
  ])();
}

export function toolCall(rng: Rng, n: number, asString: boolean): ToolCall {
  const args = argsValue(rng);
  const name = pick(rng, ['calc', 'search']);
  // JSON strings as clients send them: compact or spaced, and sometimes already objects.
  const str = pick(rng, [JSON.stringify(args), JSON.stringify(args, null, 1).replace(/\n\s*/g, ' ')]);
  return { id: `call_${n}`, type: 'function', function: { name, arguments: asString ? str : (args as Record<string, unknown>) } };
}

export interface RandomRender {
  template: 'qwen3' | 'chatml';
  messages: ChatMessage[];
  tools?: ToolSpec[];
  addGenerationPrompt: boolean;
  enableThinking?: boolean;
  vllm: boolean;
}

/** One random render request; ChatML ones carry no tools or tool calls (that template has none). */
export function randomRender(seed: number): RandomRender {
  const rng = mulberry32(seed);
  const template = rng() < 0.75 ? 'qwen3' : 'chatml';
  const withTools = template === 'qwen3' && rng() < 0.6;
  const planAct = rng() < 0.3;
  const messages: ChatMessage[] = [];
  if (rng() < 0.5) messages.push({ role: 'system', content: planAct ? 'You are the planner. Write a plan, then read the actor.' : text(rng) });
  let calls = 0;
  const turns = randInt(rng, 1, 4);
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: planAct && t > 0 ? `Actor report: ${words(rng)}` : words(rng) });
    const steps = withTools ? randInt(rng, 0, 2) : 0;
    for (let s = 0; s <= steps; s++) {
      const last = s === steps;
      const m: Extract<ChatMessage, { role: 'assistant' }> = { role: 'assistant', content: planAct ? `Plan: ${words(rng)}` : text(rng) };
      if (template === 'qwen3') {
        const r = rng();
        if (r < 0.25) m.reasoning_content = text(rng);
        else if (r < 0.35) m.reasoning_content = '';
        else if (r < 0.5) m.content = `<think>\n${text(rng)}\n</think>\n\n${m.content}`;
      }
      if (!last || (withTools && rng() < 0.2)) {
        const n = randInt(rng, 1, 3); // parallel calls
        const asString = rng() < 0.7;
        m.tool_calls = Array.from({ length: n }, () => toolCall(rng, calls++, asString));
        messages.push(m);
        // Consecutive tool messages, one per call.
        for (const c of m.tool_calls) messages.push({ role: 'tool', tool_call_id: c.id, name: c.function.name, content: words(rng, 4) });
        if (last) break;
      } else messages.push(m);
    }
  }
  if (rng() < 0.4 && messages.at(-1)?.role === 'assistant') messages.pop();
  const thinking = rng();
  return {
    template,
    messages,
    tools: withTools ? (rng() < 0.5 ? [CALC_TOOL] : [CALC_TOOL, SEARCH_TOOL]) : undefined,
    addGenerationPrompt: messages.at(-1)?.role !== 'assistant' || rng() < 0.2,
    enableThinking: thinking < 0.33 ? undefined : thinking < 0.66,
    vllm: rng() < 0.5,
  };
}
