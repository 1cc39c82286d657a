/**
 * The calculator tool: + - * on integers, parsed by hand (never eval) because the input is written
 * by a policy under training and must be treated as hostile.
 *
 * Grammar (spaces ignored):  expr := term (('+'|'-') term)*   term := factor ('*' factor)*
 *                            factor := '-'? digits
 * A unary minus on a literal is allowed because the planner copies negative RESULT values into new
 * acts verbatim ("-5+7", "42+-39", "-14*3").
 */

export type CalcErrorReason = 'empty' | 'too-long' | 'bad-char' | 'syntax' | 'number-too-long' | 'overflow';

export class CalcInputError extends Error {
  override readonly name = 'CalcInputError';
  constructor(
    readonly reason: CalcErrorReason,
    message: string,
  ) {
    super(message);
  }
}

export const CALC_LIMITS = {
  maxInputChars: 128,
  maxLiteralDigits: 12,
  /** Bound on every literal and intermediate value; keeps results exact in float64 and short to read. */
  maxAbsValue: 1e12,
} as const;

class Cursor {
  pos = 0;
  constructor(readonly text: string) {}

  skipSpaces(): void {
    while (this.text[this.pos] === ' ') this.pos++;
  }

  peek(): string | undefined {
    this.skipSpaces();
    return this.text[this.pos];
  }
}

function checkRange(value: number, what: string): number {
  if (!(Math.abs(value) <= CALC_LIMITS.maxAbsValue)) {
    throw new CalcInputError('overflow', `${what} exceeds ${CALC_LIMITS.maxAbsValue}`);
  }
  // Normalises -0 so "0*-3" prints as "0".
  return value === 0 ? 0 : value;
}

function parseFactor(c: Cursor): number {
  let sign = 1;
  if (c.peek() === '-') {
    sign = -1;
    c.pos++;
  }
  c.skipSpaces();
  const start = c.pos;
  while (c.pos < c.text.length && c.text[c.pos]! >= '0' && c.text[c.pos]! <= '9') c.pos++;
  if (c.pos === start) {
    const found = c.text[c.pos];
    throw new CalcInputError('syntax', found === undefined ? 'expected a number at end' : `expected a number at ${c.pos}, found '${found}'`);
  }
  const digits = c.pos - start;
  if (digits > CALC_LIMITS.maxLiteralDigits) {
    throw new CalcInputError('number-too-long', `number with ${digits} digits (max ${CALC_LIMITS.maxLiteralDigits})`);
  }
  return checkRange(sign * Number(c.text.slice(start, c.pos)), 'number');
}

function parseTerm(c: Cursor): number {
  let value = parseFactor(c);
  while (c.peek() === '*') {
    c.pos++;
    value = checkRange(value * parseFactor(c), 'product');
  }
  return value;
}

function parseExpr(c: Cursor): number {
  let value = parseTerm(c);
  for (let op = c.peek(); op === '+' || op === '-'; op = c.peek()) {
    c.pos++;
    const rhs = parseTerm(c);
    value = checkRange(op === '+' ? value + rhs : value - rhs, 'sum');
  }
  return value;
}

/** Evaluates an expression; throws CalcInputError on anything outside the grammar or limits. */
export function evaluateExpression(expression: string): number {
  if (expression.length > CALC_LIMITS.maxInputChars) {
    throw new CalcInputError('too-long', `input of ${expression.length} chars (max ${CALC_LIMITS.maxInputChars})`);
  }
  const bad = /[^0-9+\-* ]/.exec(expression);
  if (bad) {
    throw new CalcInputError('bad-char', `unexpected character ${JSON.stringify(bad[0])} at ${bad.index}`);
  }
  if (expression.trim() === '') throw new CalcInputError('empty', 'empty expression');
  const c = new Cursor(expression);
  const value = parseExpr(c);
  const rest = c.peek();
  if (rest !== undefined) throw new CalcInputError('syntax', `unexpected '${rest}' at ${c.pos}`);
  return value;
}

/** The tool as the actor sees it: expression text in, decimal integer text out. */
export function calc(expression: string): string {
  return String(evaluateExpression(expression));
}
