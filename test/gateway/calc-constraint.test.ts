/**
 * The forced-call constraint against the calculator itself: a constrained row may end exactly on the
 * calls the calculator runs, and every prefix it allows can still be finished into one.
 */
import { calcCallConstraint } from '../../src/gateway/calc-constraint';
import { CALC_LIMITS, evaluateExpression } from '../../src/tasks/arith/calc';
import { mulberry32, pick, randInt, type Rng } from '../../src/domain/rng';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from '../../src/planact/protocol';

const call = (expression: string): string => `${TOOL_CALL_OPEN}${expression}${TOOL_CALL_CLOSE}`;

function runs(expression: string): boolean {
  try {
    evaluateExpression(expression);
    return true;
  } catch {
    return false;
  }
}

/** Expressions near the calculator's edges: long literals, large products and sums, odd spacing. */
function nearEdge(rng: Rng): string {
  const parts: string[] = [];
  const terms = randInt(rng, 1, 6);
  for (let t = 0; t < terms; t++) {
    if (t > 0) parts.push(pick(rng, ['+', '-', ' + ', '-', '*', '+-']));
    if (rng() < 0.2) parts.push('-');
    parts.push(pick(rng, ['9', '1', '0']).repeat(randInt(rng, 1, 14)));
    if (rng() < 0.1) parts.push(pick(rng, [' ', '  ', '']));
  }
  if (rng() < 0.05) parts.push(pick(rng, ['+', '*', '-', '5 5', '--1']));
  return parts.join('');
}

/** Any text over the calculator's alphabet. */
function anyText(rng: Rng): string {
  return Array.from({ length: randInt(rng, 0, 24) }, () => pick(rng, [...'0123456789+-* '])).join('');
}

const samples = (n: number): string[] => {
  const rng = mulberry32(20261124);
  return Array.from({ length: n }, (_, i) => (i % 3 === 0 ? anyText(rng) : nearEdge(rng)));
};

describe('calcCallConstraint', () => {
  it('completes exactly the calls the calculator runs, limits included', () => {
    const texts = [
      ...samples(6000),
      '999999999999',
      '9999999999999',
      '1000000*1000000',
      '1000000*1000001',
      '999999999999+1',
      '999999999999+1*0',
      '-999999999999-1',
      '1'.repeat(12) + '+0'.repeat(58),
      '1'.repeat(12) + '+0'.repeat(59),
      '',
      ' ',
      '-',
      '5 5',
    ];
    let valid = 0;
    for (const e of texts) {
      expect([e, calcCallConstraint.isComplete(call(e))]).toEqual([e, runs(e)]);
      if (runs(e)) valid++;
    }
    expect(valid).toBeGreaterThan(1000);
  });

  it('allows every prefix of a call the calculator runs', () => {
    for (const e of samples(1500).filter(runs)) {
      const whole = call(e);
      for (let n = 0; n <= whole.length; n++) expect([whole.slice(0, n), calcCallConstraint.allowsPrefix(whole.slice(0, n))]).toEqual([whole.slice(0, n), true]);
    }
  });

  it('allows a prefix only if it can still be finished into a call the calculator runs', () => {
    let allowed = 0;
    for (const e of samples(3000)) {
      for (let n = 0; n <= e.length; n++) {
        const prefix = e.slice(0, n);
        if (!calcCallConstraint.allowsPrefix(TOOL_CALL_OPEN + prefix)) continue;
        allowed++;
        // The shortest endings: nothing, a literal after an operator, or "*0" to empty a term whose sum is too large.
        const ending = ['', '0', '*0'].find((s) => runs(prefix + s) && (prefix + s).length <= CALC_LIMITS.maxInputChars);
        expect([prefix, ending !== undefined]).toEqual([prefix, true]);
        expect(calcCallConstraint.isComplete(call(prefix + ending!))).toBe(true);
      }
    }
    expect(allowed).toBeGreaterThan(10_000);
  });

  it('refuses a literal longer than the calculator reads as soon as its thirteenth digit is written', () => {
    expect(calcCallConstraint.allowsPrefix(`${TOOL_CALL_OPEN}7*${'4'.repeat(12)}`)).toBe(false);
    expect(calcCallConstraint.allowsPrefix(`${TOOL_CALL_OPEN}${'4'.repeat(12)}`)).toBe(true);
    expect(calcCallConstraint.allowsPrefix(`${TOOL_CALL_OPEN}${'4'.repeat(13)}`)).toBe(false);
    expect(calcCallConstraint.allowsPrefix(`${TOOL_CALL_OPEN}1+1</calc>x`)).toBe(false);
    expect(calcCallConstraint.allowsPrefix('<cal')).toBe(true);
    expect(calcCallConstraint.allowsPrefix('<cax')).toBe(false);
  });

  it('refuses a long expression that could only end past the calculator\'s input limit', () => {
    const longest = '1+'.repeat(CALC_LIMITS.maxInputChars / 2 - 1) + '1';
    expect(longest.length).toBe(CALC_LIMITS.maxInputChars - 1);
    expect(calcCallConstraint.allowsPrefix(TOOL_CALL_OPEN + longest + '+')).toBe(false);
    expect(calcCallConstraint.allowsPrefix(TOOL_CALL_OPEN + longest + '1')).toBe(true);
    expect(calcCallConstraint.isComplete(call(longest + '1'))).toBe(true);
  });
});
