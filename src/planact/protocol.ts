/**
 * The Plan/Act text protocol: the exact strings the policy reads and writes. The policy learns these
 * byte for byte, so every producer (episode driver, SFT demonstrations, tokenizer corpus) builds
 * them here and nowhere else.
 *
 * Planner context for turn t (what the planner is prompted with):
 *   <task prompt>                      e.g. "Compute: 17+25+8+31\n"
 *   then for every earlier turn:  <planner output><EOS><RESULT lines>
 * A planner output is newline-terminated lines, "ACT <id>: <expression>\n"... or "ANSWER: <value>\n".
 * RESULT lines are "RESULT <id>: <value>\n", in the order the acts were listed.
 *
 * Actor transcript:
 *   <act prompt>                       e.g. "Evaluate: 17+25\n"
 *   then any number of:  <calc>expr</calc>  +  "\n<result>value</result>\n"   (environment text)
 *   then the answer and EOS:  "42" <EOS>
 * The environment's newlines keep every model/environment boundary a pre-token boundary of the
 * byte-level tokenizer, so a context tokenized whole equals its pieces tokenized one by one.
 */

/** Text of the end-of-turn token; the tokenizer maps it to a single special id. */
export const EOS_TEXT = '<|eos|>';

export const TOOL_CALL_OPEN = '<calc>';
export const TOOL_CALL_CLOSE = '</calc>';
export const TOOL_RESULT_OPEN = '<result>';
export const TOOL_RESULT_CLOSE = '</result>';

export interface PlannedAct {
  id: string;
  expression: string;
}

export interface ActResult {
  id: string;
  value: string;
}

export function formatActs(acts: readonly PlannedAct[]): string {
  return acts.map((a) => `ACT ${a.id}: ${a.expression}\n`).join('');
}

export function formatAnswer(value: string): string {
  return `ANSWER: ${value}\n`;
}

export function formatResults(results: readonly ActResult[]): string {
  return results.map((r) => `RESULT ${r.id}: ${r.value}\n`).join('');
}

/** A model turn as it appears in later contexts: its text, then the end-of-turn token. */
export function closeTurn(modelText: string): string {
  return `${stripEos(modelText)}${EOS_TEXT}`;
}

/** Engines differ on whether the EOS text is part of the completion; contexts add it exactly once. */
export function stripEos(text: string): string {
  return text.endsWith(EOS_TEXT) ? text.slice(0, -EOS_TEXT.length) : text;
}

export function formatToolCall(expression: string): string {
  return `${TOOL_CALL_OPEN}${expression}${TOOL_CALL_CLOSE}`;
}

/** Environment text appended after a tool call (loss mask 0). */
export function formatToolResult(value: string): string {
  return `\n${TOOL_RESULT_OPEN}${value}${TOOL_RESULT_CLOSE}\n`;
}

/** Tool failures go back to the actor in-band, so it can recover instead of the episode crashing. */
export function formatToolError(message: string): string {
  return formatToolResult(`error: ${oneLine(message)}`);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, 80);
}
