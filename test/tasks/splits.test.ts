/** task.split subproblem: no act of a test or validation problem is ever demonstrated or trained on. */
import { actKey, actPart, drawProblems, generateProblems, problemActs, problemFromExpression, problemPart, type ProblemPart } from '../../src/tasks/arith';
import { parseRunConfig } from '../../src/config/parse';

const difficulty = parseRunConfig({}).task.difficulty;
const wide = { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+', '-', '*'] as Array<'+' | '-' | '*'> };

test('an act is the same sub-problem with its operands in either order for + and *, in order for -', () => {
  expect(actKey('25+7')).toBe(actKey('7+25'));
  expect(actKey('3*12')).toBe(actKey('12*3'));
  expect(actKey('25-7')).not.toBe(actKey('7-25'));
  expect(actKey('-8-31')).toBe('-:-8,31');
  expect(actPart('25+7')).toBe(actPart('7+25'));
  expect(() => actKey('1+2+3')).toThrow(RangeError);
});

test('each part holds only problems whose every act is of that part; no act is in two parts', () => {
  for (const d of [difficulty, wide]) {
    const owner = new Map<string, string>();
    for (const part of ['sft', 'rl', 'validation', 'test'] as ProblemPart[]) {
      const problems = drawProblems({ seed: 11, count: 400, scheme: 'subproblem', part, difficulty: d });
      for (const p of problems) {
        expect(problemPart(p)).toBe(part);
        const actPartWanted = part === 'sft' || part === 'rl' ? 'train' : part;
        for (const act of problemActs(p)) {
          expect(actPart(act)).toBe(actPartWanted);
          const key = actKey(act);
          expect([undefined, actPartWanted]).toContain(owner.get(key));
          owner.set(key, actPartWanted);
        }
      }
    }
  }
});

test('sft and rl are disjoint as whole problems; evaluation sets are distinct and keep the mix of lengths', () => {
  const sft = new Set(drawProblems({ seed: 5, count: 2000, scheme: 'subproblem', part: 'sft', difficulty }).map((p) => p.expression));
  const rl = drawProblems({ seed: 6, count: 2000, scheme: 'subproblem', part: 'rl', difficulty });
  expect(rl.filter((p) => sft.has(p.expression))).toEqual([]);
  const test = drawProblems({ seed: 7, count: 256, scheme: 'subproblem', part: 'test', difficulty, distinct: true });
  expect(new Set(test.map((p) => p.expression)).size).toBe(256);
  // The number of terms is drawn first, so 3-term problems are not crowded out (about half, not ~10%).
  const threeTerm = test.filter((p) => p.terms.length === 3).length / test.length;
  expect(threeTerm).toBeGreaterThan(0.35);
  expect(threeTerm).toBeLessThan(0.65);
});

test('asking for more distinct problems than the part holds fails with a clear error', () => {
  const tiny = { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 1, operators: ['+'] as Array<'+'> };
  expect(() => drawProblems({ seed: 1, count: 100, scheme: 'subproblem', part: 'test', difficulty: tiny, distinct: true })).toThrow(/only \d+ distinct test problems/);
});

test('task.split expression draws exactly what the whole-expression split always did', () => {
  const old = generateProblems({ seed: 9, count: 50, split: 'train', difficulty });
  expect(drawProblems({ seed: 9, count: 50, scheme: 'expression', part: 'rl', difficulty })).toEqual(old);
  expect(drawProblems({ seed: 9, count: 50, scheme: 'expression', part: 'sft', difficulty })).toEqual(old);
  expect(drawProblems({ seed: 9, count: 50, scheme: 'expression', part: 'test', difficulty })).toEqual(generateProblems({ seed: 9, count: 50, split: 'heldout', difficulty }));
});

test('the parts are random with respect to the operands: no parity or digit pattern decides them', () => {
  // Every one- and two-digit sum a+b (a <= b): the share of test acts and of sft problems must not
  // depend on how many odd digits the expression has (FNV-1a's lowest bit is exactly that parity,
  // so '% 2' of it alone put every 1+3 on one side and every 1+2 on the other).
  const byParity = { even: { acts: 0, test: 0, problems: 0, sft: 0 }, odd: { acts: 0, test: 0, problems: 0, sft: 0 } };
  for (let a = 0; a < 100; a++) {
    for (let b = a; b < 100; b++) {
      const oddDigits = [...`${a}${b}`].filter((d) => Number(d) % 2 === 1).length;
      const side = oddDigits % 2 === 0 ? byParity.even : byParity.odd;
      side.acts++;
      if (actPart(`${a}+${b}`) === 'test') side.test++;
      const part = problemPart(problemFromExpression(`${a}+${b}`));
      if (part === 'sft' || part === 'rl') {
        side.problems++;
        if (part === 'sft') side.sft++;
      }
    }
  }
  for (const side of [byParity.even, byParity.odd]) {
    expect(side.test / side.acts).toBeGreaterThan(0.08);
    expect(side.test / side.acts).toBeLessThan(0.12);
    expect(side.sft / side.problems).toBeGreaterThan(0.45);
    expect(side.sft / side.problems).toBeLessThan(0.55);
  }
});
