import { calc, CALC_LIMITS, CalcInputError, evaluateExpression, type CalcErrorReason } from '../../src/tasks/arith/calc';

function reasonOf(expression: string): CalcErrorReason | undefined {
  try {
    evaluateExpression(expression);
    return undefined;
  } catch (err) {
    if (err instanceof CalcInputError) return err.reason;
    throw err;
  }
}

describe('calc', () => {
  it.each([
    ['17+25', '42'],
    ['2+3*4', '14'],
    ['2*3+4*5*6-7*2', '112'],
    ['10-2-3', '5'],
    ['-8-31', '-39'],
    ['42+-39', '3'],
    ['-14*3', '-42'],
    ['2*-3', '-6'],
    [' 1 + 2 * 3 ', '7'],
    ['0*-5', '0'],
    ['007', '7'],
  ])('%s = %s', (expression, expected) => {
    expect(calc(expression)).toBe(expected);
  });

  it.each<[string, CalcErrorReason]>([
    ['', 'empty'],
    ['   ', 'empty'],
    ['1'.repeat(CALC_LIMITS.maxInputChars + 1), 'too-long'],
    ['process.exit(1)', 'bad-char'],
    ['(1+2)', 'bad-char'],
    ['1/2', 'bad-char'],
    ['2^3', 'bad-char'],
    ['1.5+1', 'bad-char'],
    ['17+', 'syntax'],
    ['+5', 'syntax'],
    ['17++25', 'syntax'],
    ['--1', 'syntax'],
    ['17 25', 'syntax'],
    ['1'.repeat(CALC_LIMITS.maxLiteralDigits + 1), 'number-too-long'],
    ['999999*999999*9', 'overflow'],
    ['999999999999+999999999999', 'overflow'],
  ])('rejects %j with reason %s', (expression, reason) => {
    expect(reasonOf(expression)).toBe(reason);
  });

  it('throws a typed error with a readable message', () => {
    expect(() => calc('3x')).toThrow(CalcInputError);
    expect(() => calc('3x')).toThrow('unexpected character "x" at 1');
    const err = (() => {
      try {
        calc('4*');
      } catch (e) {
        return e as CalcInputError;
      }
      return undefined;
    })();
    expect(err?.name).toBe('CalcInputError');
    expect(err?.reason).toBe('syntax');
  });
});
