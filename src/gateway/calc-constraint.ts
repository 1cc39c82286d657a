/**
 * The constraint behind `tool_choice: "required"` or a named `calc` function: the policy's output must
 * be exactly one calculator call, `<calc>` + an expression of the calculator's grammar + `</calc>`
 * (src/tasks/arith/calc.ts: integers joined by + - *, a unary minus on a literal, spaces anywhere).
 * Read character by character, so the engine can ask of any prefix whether it can still become one.
 */
import type { TokenConstraint } from '../engine/row-control';
import { CALC_LIMITS } from '../tasks/arith/calc';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../planact/protocol';

type State = 'factor' | 'minus' | 'digits' | 'after';

/** How far `text` gets: 'dead' if no call starts so; 'open' if it may grow into one; 'done' if it is one. */
function scan(text: string): 'dead' | 'open' | 'done' {
  if (text.length <= TOOL_CALL_OPEN.length) return TOOL_CALL_OPEN.startsWith(text) ? 'open' : 'dead';
  if (!text.startsWith(TOOL_CALL_OPEN)) return 'dead';
  const body = text.slice(TOOL_CALL_OPEN.length);
  let state: State = 'factor';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '<') {
      // The closing tag may follow a whole literal only, and nothing may follow it.
      if (state !== 'digits' && state !== 'after') return 'dead';
      const tail = body.slice(i);
      if (tail.length < TOOL_CALL_CLOSE.length) return TOOL_CALL_CLOSE.startsWith(tail) ? 'open' : 'dead';
      return tail === TOOL_CALL_CLOSE && i <= CALC_LIMITS.maxInputChars ? 'done' : 'dead';
    }
    if (i >= CALC_LIMITS.maxInputChars) return 'dead';
    const digit = c >= '0' && c <= '9';
    if (c === ' ') state = state === 'digits' ? 'after' : state;
    else if (digit && state !== 'after') state = 'digits';
    else if (c === '-' && state === 'factor') state = 'minus';
    else if ((c === '+' || c === '-' || c === '*') && (state === 'digits' || state === 'after')) state = 'factor';
    else return 'dead';
  }
  return 'open';
}

export const calcCallConstraint: TokenConstraint = {
  allowsPrefix: (text) => scan(text) !== 'dead',
  isComplete: (text) => scan(text) === 'done',
};
