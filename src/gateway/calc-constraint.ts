/**
 * The constraint behind `tool_choice: "required"` or a named `calc` function: the policy's output must
 * be exactly one calculator call, `<calc>` + an expression the calculator runs + `</calc>`
 * (src/tasks/arith/calc.ts: integers joined by + - *, a unary minus on a literal, spaces anywhere,
 * within its limits on length, literal digits and every checked value).
 * Read character by character, so the engine can ask of any prefix whether it can still become one;
 * a prefix is allowed exactly when some completion of it is a call the calculator accepts, so a
 * constrained row never reaches a point where no token may follow.
 */
import type { TokenConstraint } from '../engine/row-control';
import { CALC_LIMITS } from '../tasks/arith/calc';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../planact/protocol';

type State = 'factor' | 'minus' | 'digits' | 'after';

const inRange = (v: number): boolean => Math.abs(v) <= CALC_LIMITS.maxAbsValue;

/**
 * The calculator's evaluation, run as the text arrives. It checks what the calculator checks, when
 * the calculator checks it: a literal's digits, each product as its factor ends, each sum as its term
 * ends. A literal being written only grows in size, so a product that is already too large stays so.
 */
class Evaluation {
  state: State = 'factor';
  private sum = 0;
  private termSign = 1;
  private product = 1;
  private literalSign = 1;
  private literal = '';

  /** The current term's product with the literal as written so far. */
  private partialProduct(): number {
    return this.product * this.literalSign * Number(this.literal);
  }

  /** false when the text can no longer become an expression the calculator runs. */
  push(c: string): boolean {
    if (c === ' ') {
      if (this.state === 'digits') this.state = 'after';
      return true;
    }
    if (c >= '0' && c <= '9') {
      if (this.state === 'after') return false;
      this.literal += c;
      this.state = 'digits';
      return this.literal.length <= CALC_LIMITS.maxLiteralDigits && inRange(this.partialProduct());
    }
    if (c === '-' && this.state === 'factor') {
      this.literalSign = -1;
      this.state = 'minus';
      return true;
    }
    if ((c === '+' || c === '-' || c === '*') && (this.state === 'digits' || this.state === 'after')) {
      this.product = this.partialProduct();
      this.literal = '';
      this.literalSign = 1;
      this.state = 'factor';
      if (c === '*') return true;
      const ok = this.endTerm();
      this.termSign = c === '+' ? 1 : -1;
      return ok;
    }
    return false;
  }

  /** Adds the finished term to the sum, false if the calculator would refuse the sum. */
  private endTerm(): boolean {
    this.sum += this.termSign * this.product;
    this.product = 1;
    return inRange(this.sum);
  }

  /** Whether the expression read so far, ended here, is one the calculator runs. */
  endsHere(): boolean {
    if (this.state !== 'digits' && this.state !== 'after') return false;
    return inRange(this.sum + this.termSign * this.partialProduct());
  }

  /**
   * The fewest characters still to write before the expression can end: a literal after an operator
   * or minus ("0"); nothing if it may end now; "*0" if only the open term's sum is too large.
   */
  charsToEnd(): number {
    if (this.state === 'factor' || this.state === 'minus') return 1;
    return this.endsHere() ? 0 : 2;
  }
}

/** How far `text` gets: 'dead' if no call starts so; 'open' if it may grow into one; 'done' if it is one. */
function scan(text: string): 'dead' | 'open' | 'done' {
  if (text.length <= TOOL_CALL_OPEN.length) return TOOL_CALL_OPEN.startsWith(text) ? 'open' : 'dead';
  if (!text.startsWith(TOOL_CALL_OPEN)) return 'dead';
  const body = text.slice(TOOL_CALL_OPEN.length);
  const closeAt = body.indexOf('<');
  const expression = closeAt === -1 ? body : body.slice(0, closeAt);
  if (expression.length > CALC_LIMITS.maxInputChars) return 'dead';
  const evaluation = new Evaluation();
  for (const c of expression) if (!evaluation.push(c)) return 'dead';
  if (closeAt === -1) return expression.length + evaluation.charsToEnd() <= CALC_LIMITS.maxInputChars ? 'open' : 'dead';
  // The closing tag may follow a whole expression only, and nothing may follow it.
  if (!evaluation.endsHere()) return 'dead';
  const tail = body.slice(closeAt);
  if (tail.length < TOOL_CALL_CLOSE.length) return TOOL_CALL_CLOSE.startsWith(tail) ? 'open' : 'dead';
  return tail === TOOL_CALL_CLOSE ? 'done' : 'dead';
}

export const calcCallConstraint: TokenConstraint = {
  allowsPrefix: (text) => scan(text) !== 'dead',
  isComplete: (text) => scan(text) === 'done',
};
