/**
 * Arithmetic problems: seeded generation and the train / held-out split.
 *
 * The split is a pure function of the expression text, so no seed, count or difficulty can ever
 * put the same problem on both sides: evaluation measures generalisation, not memorisation.
 */
import { CALC_LIMITS } from './calc';
import { DEFAULT_ARITH_DIFFICULTY, validateDifficulty, ArithDifficultyError, type ArithDifficulty, type ArithOperator } from './difficulty';
import { fnv1a32, mulberry32, pick, randInt, type Rng } from '../../domain/rng';

export type ArithSplit = 'train' | 'heldout';

export interface ArithProblem {
  /** Readable and unique: "arith:17+25+8+31". */
  id: string;
  /** "17+25+8+31": no spaces, non-negative literals. */
  expression: string;
  terms: number[];
  /** operators[i] sits between terms[i] and terms[i + 1]. */
  operators: ArithOperator[];
  answer: number;
  split: ArithSplit;
}

/** Share of all expressions that belong to the held-out split. Fixed, so every run agrees. */
export const HELD_OUT_PERCENT = 10;

export function splitOf(expression: string): ArithSplit {
  return fnv1a32(`split:${expression}`) % 100 < HELD_OUT_PERCENT ? 'heldout' : 'train';
}

export function formatExpression(terms: readonly number[], operators: readonly ArithOperator[]): string {
  return terms.map((t, i) => (i === 0 ? String(t) : `${operators[i - 1]}${t}`)).join('');
}

/**
 * The expression as a sum of signed products, e.g. 2*3-4*5+6 -> [[2,3],[-4,5],[6]]: the sign of a
 * subtracted product rides on its first factor. Both the answer and the oracle plan use this shape.
 */
export function signedProducts(terms: readonly number[], operators: readonly ArithOperator[]): number[][] {
  const out: number[][] = [[terms[0]!]];
  for (let i = 1; i < terms.length; i++) {
    const op = operators[i - 1];
    if (op === '*') out[out.length - 1]!.push(terms[i]!);
    else out.push([op === '-' ? -terms[i]! : terms[i]!]);
  }
  return out;
}

/** True when every value the oracle plan passes through stays inside the calculator's limits. */
export function withinCalcLimits(products: number[][]): boolean {
  let sumOfMagnitudes = 0;
  for (const factors of products) {
    const magnitude = factors.reduce((acc, f) => acc * Math.abs(f), 1);
    if (magnitude > CALC_LIMITS.maxAbsValue) return false;
    sumOfMagnitudes += magnitude;
  }
  return sumOfMagnitudes <= CALC_LIMITS.maxAbsValue;
}

function evaluateProducts(products: number[][]): number {
  const value = products.reduce((sum, factors) => sum + factors.reduce((acc, f) => acc * f, 1), 0);
  return value === 0 ? 0 : value;
}

/** Builds a problem from its parts; throws RangeError for shapes the task does not produce. */
export function makeProblem(terms: readonly number[], operators: readonly ArithOperator[]): ArithProblem {
  if (terms.length < 1 || operators.length !== terms.length - 1) {
    throw new RangeError(`need n terms and n-1 operators, got ${terms.length} and ${operators.length}`);
  }
  if (!terms.every((t) => Number.isSafeInteger(t) && t >= 0)) throw new RangeError('terms must be non-negative integers');
  const products = signedProducts(terms, operators);
  if (!withinCalcLimits(products)) throw new RangeError('problem exceeds the calculator limits');
  const expression = formatExpression(terms, operators);
  return {
    id: `arith:${expression}`,
    expression,
    terms: [...terms],
    operators: [...operators],
    answer: evaluateProducts(products),
    split: splitOf(expression),
  };
}

/** Parses "17+25*3" (the canonical form only: digits and single operators, no spaces). */
export function problemFromExpression(expression: string): ArithProblem {
  if (!/^\d+([+\-*]\d+)*$/.test(expression)) {
    throw new RangeError(`not a canonical arithmetic expression: ${JSON.stringify(expression)}`);
  }
  const terms = expression.split(/[+\-*]/).map(Number);
  const operators = (expression.match(/[+\-*]/g) ?? []) as ArithOperator[];
  return makeProblem(terms, operators);
}

export function randomTerm(rng: Rng, d: ArithDifficulty): number {
  const digits = randInt(rng, d.minDigits, d.maxDigits);
  return digits === 1 ? randInt(rng, 0, 9) : randInt(rng, 10 ** (digits - 1), 10 ** digits - 1);
}

/** Rejection sampling keeps generation total on the happy path and bounded on impossible configs. */
const MAX_ATTEMPTS = 10_000;

/** One problem from `split`, drawn from rng. */
export function generateProblem(rng: Rng, difficulty: ArithDifficulty, split: ArithSplit): ArithProblem {
  validateDifficulty(difficulty);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const n = randInt(rng, difficulty.minTerms, difficulty.maxTerms);
    const terms = Array.from({ length: n }, () => randomTerm(rng, difficulty));
    const operators = Array.from({ length: n - 1 }, () => pick(rng, difficulty.operators));
    if (!withinCalcLimits(signedProducts(terms, operators))) continue;
    const expression = formatExpression(terms, operators);
    if (splitOf(expression) !== split) continue;
    return makeProblem(terms, operators);
  }
  throw new ArithDifficultyError(`no ${split} problem within the calculator limits after ${MAX_ATTEMPTS} draws; lower digits or terms`);
}

export interface GenerateProblemsOptions {
  seed: number;
  count: number;
  split: ArithSplit;
  difficulty?: ArithDifficulty;
}

/** `count` problems, the same for the same options on every machine (repeats are possible). */
export function generateProblems(opts: GenerateProblemsOptions): ArithProblem[] {
  const rng = mulberry32(opts.seed);
  const difficulty = opts.difficulty ?? DEFAULT_ARITH_DIFFICULTY;
  return Array.from({ length: opts.count }, () => generateProblem(rng, difficulty, opts.split));
}
