import { evaluateExpression } from '../../src/tasks/arith/calc';
import { ArithDifficultyError, DEFAULT_ARITH_DIFFICULTY, validateDifficulty, type ArithDifficulty } from '../../src/tasks/arith/difficulty';
import { generateProblems, HELD_OUT_PERCENT, makeProblem, problemFromExpression, splitOf } from '../../src/tasks/arith/problem';
import { fnv1a32, mulberry32, randInt } from '../../src/domain/rng';

const MIXED: ArithDifficulty = { minTerms: 2, maxTerms: 6, minDigits: 1, maxDigits: 3, operators: ['+', '-', '*'] };

describe('rng', () => {
  it('is reproducible and spread over its range', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const rng = mulberry32(1);
    const seen = new Set(Array.from({ length: 500 }, () => randInt(rng, 3, 7)));
    expect([...seen].sort()).toEqual([3, 4, 5, 6, 7]);
    expect(fnv1a32('17+25')).toBe(fnv1a32('17+25'));
  });
});

describe('problem generator', () => {
  it('is deterministic for a seed and differs across seeds', () => {
    const a = generateProblems({ seed: 7, count: 50, split: 'train', difficulty: MIXED });
    const b = generateProblems({ seed: 7, count: 50, split: 'train', difficulty: MIXED });
    const c = generateProblems({ seed: 8, count: 50, split: 'train', difficulty: MIXED });
    expect(a).toEqual(b);
    expect(a.map((p) => p.expression)).not.toEqual(c.map((p) => p.expression));
  });

  it('respects the difficulty and computes the right answer', () => {
    for (const p of generateProblems({ seed: 3, count: 300, split: 'train', difficulty: MIXED })) {
      expect(p.terms.length).toBeGreaterThanOrEqual(2);
      expect(p.terms.length).toBeLessThanOrEqual(6);
      for (const t of p.terms) expect(String(t).length).toBeLessThanOrEqual(3);
      expect(p.answer).toBe(evaluateExpression(p.expression));
      expect(p.id).toBe(`arith:${p.expression}`);
      expect(problemFromExpression(p.expression)).toEqual(p);
    }
    const defaults = generateProblems({ seed: 3, count: 200, split: 'train' });
    for (const p of defaults) {
      expect(p.operators.every((op) => op === '+')).toBe(true);
      expect(p.terms.length).toBeLessThanOrEqual(DEFAULT_ARITH_DIFFICULTY.maxTerms);
      expect(p.terms.every((t) => t <= 99)).toBe(true);
    }
  });

  it('never puts an expression in both splits', () => {
    const small: ArithDifficulty = { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 1, operators: ['+', '-'] };
    const train = generateProblems({ seed: 1, count: 2000, split: 'train', difficulty: small });
    const heldout = generateProblems({ seed: 2, count: 500, split: 'heldout', difficulty: small });
    const trainSet = new Set(train.map((p) => p.expression));
    expect(heldout.every((p) => p.split === 'heldout' && splitOf(p.expression) === 'heldout')).toBe(true);
    expect(train.every((p) => p.split === 'train')).toBe(true);
    expect(heldout.filter((p) => trainSet.has(p.expression))).toEqual([]);
    // The small space is exhausted, so the held-out share is visible: roughly HELD_OUT_PERCENT of 200.
    const all = new Set([...trainSet, ...heldout.map((p) => p.expression)]);
    expect(all.size).toBe(200);
    const share = new Set(heldout.map((p) => p.expression)).size / all.size;
    expect(share).toBeGreaterThan(HELD_OUT_PERCENT / 100 / 3);
    expect(share).toBeLessThan((HELD_OUT_PERCENT / 100) * 3);
  });

  it('validates difficulty', () => {
    expect(validateDifficulty(DEFAULT_ARITH_DIFFICULTY)).toBe(DEFAULT_ARITH_DIFFICULTY);
    const bad: ArithDifficulty[] = [
      { ...DEFAULT_ARITH_DIFFICULTY, minTerms: 1 },
      { ...DEFAULT_ARITH_DIFFICULTY, maxTerms: 9 },
      { ...DEFAULT_ARITH_DIFFICULTY, minTerms: 3, maxTerms: 2 },
      { ...DEFAULT_ARITH_DIFFICULTY, minDigits: 0 },
      { ...DEFAULT_ARITH_DIFFICULTY, maxDigits: 5 },
      { ...DEFAULT_ARITH_DIFFICULTY, operators: [] },
      { ...DEFAULT_ARITH_DIFFICULTY, operators: ['/' as '+'] },
    ];
    for (const d of bad) expect(() => validateDifficulty(d)).toThrow(ArithDifficultyError);
    expect(() => generateProblems({ seed: 1, count: 1, split: 'train', difficulty: { ...DEFAULT_ARITH_DIFFICULTY, minTerms: 0 } })).toThrow(/minTerms/);
  });

  it('reports configurations that cannot stay within calculator limits', () => {
    const huge: ArithDifficulty = { minTerms: 8, maxTerms: 8, minDigits: 4, maxDigits: 4, operators: ['*'] };
    expect(() => generateProblems({ seed: 1, count: 1, split: 'train', difficulty: huge })).toThrow(ArithDifficultyError);
    expect(() => makeProblem([9999, 9999, 9999, 9999], ['*', '*', '*'])).toThrow(RangeError);
    expect(() => problemFromExpression('1 + 2')).toThrow(RangeError);
  });
});
