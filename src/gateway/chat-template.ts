/**
 * The embedded policy's chat template: OpenAI messages rendered as the Plan/Act text protocol the
 * policy was trained on (src/planact/protocol.ts), and its output read back as an OpenAI assistant
 * message. The one tool it knows is the calculator, `calc` with `{"expression": "..."}`, written
 * `<calc>expr</calc>` and answered `\n<result>value</result>\n`.
 */
import type { FinishReason } from '../domain/types';
import { extractToolCall } from '../planact/actor-parser';
import { closeTurn, formatToolCall, formatToolResult, stripEos, TOOL_CALL_OPEN } from '../planact/protocol';
import { GatewayError } from './errors';
import type { ChatMessage, ChatRequest } from './requests';

export const CALC_TOOL = 'calc';

export interface RenderedChat {
  text: string;
  /** Where each message begins in `text` (timeline capture). */
  messageStarts: number[];
}

/**
 * System and user messages verbatim; an assistant turn as the model wrote it (its tool calls as
 * `<calc>` text, a final answer closed by the end-of-turn token); a tool result as the protocol's
 * result block.
 */
export function renderChat(messages: readonly ChatMessage[]): RenderedChat {
  let text = '';
  const messageStarts: number[] = [];
  messages.forEach((m, i) => {
    messageStarts.push(text.length);
    switch (m.role) {
      case 'system':
      case 'user':
        text += m.content;
        break;
      case 'tool':
        text += formatToolResult(m.content);
        break;
      case 'assistant': {
        const calls = m.tool_calls ?? [];
        if (calls.length === 0) {
          text += closeTurn(m.content ?? '');
          break;
        }
        text += m.content ?? '';
        calls.forEach((c, j) => (text += formatToolCall(calcExpression(c.function.name, c.function.arguments, `messages.${i}.tool_calls.${j}.function`))));
        break;
      }
    }
  });
  return { text, messageStarts };
}

/** How the calculator may be called: not at all, when the policy chooses, or as the whole answer. */
export type ToolMode = 'off' | 'auto' | 'forced';

/**
 * Tools must be exactly the calculator (the only tool the policy was trained to call). tool_choice
 * "required" or naming `calc` forces a call (constrained decoding, see calc-constraint.ts); "none"
 * renders the tools but never reads a call.
 */
export function toolMode(req: Pick<ChatRequest, 'tools' | 'tool_choice'>): ToolMode {
  const choice = req.tool_choice;
  if (req.tools.length === 0) {
    if (choice === 'required' || typeof choice === 'object') throw new GatewayError(400, 'tool_choice requires tools: no tools were given', 'invalid_request_error', 'tool_choice');
    return 'off';
  }
  const other = req.tools.find((t) => t.function.name !== CALC_TOOL);
  if (other) throw new GatewayError(400, `the embedded policy can call only the '${CALC_TOOL}' tool, not '${other.function.name}'`, 'invalid_request_error', 'tools');
  if (typeof choice === 'object' && choice.name !== CALC_TOOL) {
    throw new GatewayError(400, `tool_choice names '${choice.name}', which is not among the tools`, 'invalid_request_error', 'tool_choice.function.name');
  }
  return choice === 'none' ? 'off' : choice === 'auto' ? 'auto' : 'forced';
}

export interface AssistantTurn {
  content: string | null;
  tool_calls?: Array<{ id: string; type: 'function'; function: { name: string; arguments: string } }>;
  finish_reason: 'stop' | 'length' | 'tool_calls';
}

/** The policy's output as an assistant message: a calculator call becomes a tool call when tools were offered. */
export function readAssistantTurn(text: string, finish: FinishReason, tools: boolean, callId: string): AssistantTurn {
  const call = tools && finish !== 'length' ? extractToolCall(text, finish) : null;
  if (call) {
    const before = call.text.slice(0, call.text.lastIndexOf(TOOL_CALL_OPEN));
    return {
      content: before === '' ? null : before,
      tool_calls: [{ id: callId, type: 'function', function: { name: CALC_TOOL, arguments: JSON.stringify({ expression: call.expression }) } }],
      finish_reason: 'tool_calls',
    };
  }
  return { content: stripEos(text), finish_reason: finish === 'length' ? 'length' : 'stop' };
}

function calcExpression(name: string, args: string, param: string): string {
  if (name !== CALC_TOOL) throw new GatewayError(400, `unknown tool '${name}': the embedded policy calls only '${CALC_TOOL}'`, 'invalid_request_error', `${param}.name`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new GatewayError(400, `tool call arguments are not JSON: ${args.slice(0, 80)}`, 'invalid_request_error', `${param}.arguments`);
  }
  const expression = (parsed as { expression?: unknown } | null)?.expression;
  if (typeof expression !== 'string' || expression.trim() === '') {
    throw new GatewayError(400, `'${CALC_TOOL}' takes {"expression": "<arithmetic>"}`, 'invalid_request_error', `${param}.arguments`);
  }
  return expression;
}
