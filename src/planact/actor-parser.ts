/**
 * Reads the actor's side of the protocol: whether a generation ended in a tool call, and what the
 * final answer of an act is.
 */
import type { FinishReason } from '../domain/types';
import { stripEos, TOOL_CALL_CLOSE, TOOL_CALL_OPEN, TOOL_RESULT_CLOSE } from './protocol';

export type ActorAnswerErrorCode = 'empty' | 'not-an-integer';

export class ActorAnswerError extends Error {
  override readonly name = 'ActorAnswerError';
  constructor(
    readonly code: ActorAnswerErrorCode,
    message: string,
  ) {
    super(message);
  }
}

export interface ToolCall {
  expression: string;
  /** The generation with its closing tag guaranteed (see extractToolCall). */
  text: string;
}

/**
 * The tool call a generation ends with, or null when it ended otherwise (a final answer).
 * OpenAI-compatible servers drop the stop string from the text, the embedded engine keeps it: an
 * opening tag left unclosed at the end of a 'stop' generation is a call whose close was the stop.
 */
export function extractToolCall(text: string, finishReason: FinishReason): ToolCall | null {
  const body = stripEos(text);
  const open = body.lastIndexOf(TOOL_CALL_OPEN);
  if (open < 0) return null;
  const after = body.slice(open + TOOL_CALL_OPEN.length);
  const close = after.indexOf(TOOL_CALL_CLOSE);
  if (close >= 0) {
    if (after.slice(close + TOOL_CALL_CLOSE.length).trim() !== '') return null;
    return { expression: after.slice(0, close).trim(), text: body };
  }
  if (finishReason !== 'stop' || body !== text) return null;
  return { expression: after.trim(), text: `${body}${TOOL_CALL_CLOSE}` };
}

const INTEGER = /^-?\d{1,15}$/;

/**
 * The act's answer: the text after the last tool result (or the whole output when no tool was
 * called), trimmed, which must be an integer.
 */
export function parseActorAnswer(transcript: string): string {
  const body = stripEos(transcript);
  const cut = body.lastIndexOf(TOOL_RESULT_CLOSE);
  const answer = (cut >= 0 ? body.slice(cut + TOOL_RESULT_CLOSE.length) : body).trim();
  if (answer === '') throw new ActorAnswerError('empty', 'actor gave no answer');
  if (!INTEGER.test(answer)) {
    const shown = answer.length > 40 ? `${answer.slice(0, 40)}...` : answer;
    throw new ActorAnswerError('not-an-integer', `actor answer is not an integer: ${JSON.stringify(shown)}`);
  }
  return answer;
}
