/** How hard generated arithmetic problems are. Plain data: it travels in run configs and workflow inputs. */

export type ArithOperator = '+' | '-' | '*';

export interface ArithDifficulty {
  minTerms: number;
  maxTerms: number;
  minDigits: number;
  maxDigits: number;
  operators: ArithOperator[];
}

export const DEFAULT_ARITH_DIFFICULTY: ArithDifficulty = {
  minTerms: 2,
  maxTerms: 4,
  minDigits: 1,
  maxDigits: 2,
  operators: ['+'],
};

/** Beyond these the transcripts outgrow the tiny policy's context window. */
export const ARITH_DIFFICULTY_LIMITS = { maxTerms: 8, maxDigits: 4 } as const;

const OPERATORS: readonly ArithOperator[] = ['+', '-', '*'];

export class ArithDifficultyError extends Error {
  override readonly name = 'ArithDifficultyError';
}

/** Throws ArithDifficultyError naming the first bad field; returns the config when it is usable. */
export function validateDifficulty(d: ArithDifficulty): ArithDifficulty {
  const intIn = (v: number, lo: number, hi: number) => Number.isInteger(v) && v >= lo && v <= hi;
  const L = ARITH_DIFFICULTY_LIMITS;
  if (!intIn(d.minTerms, 2, L.maxTerms)) throw new ArithDifficultyError(`minTerms must be an integer in 2..${L.maxTerms}, got ${d.minTerms}`);
  if (!intIn(d.maxTerms, d.minTerms, L.maxTerms)) throw new ArithDifficultyError(`maxTerms must be an integer in minTerms..${L.maxTerms}, got ${d.maxTerms}`);
  if (!intIn(d.minDigits, 1, L.maxDigits)) throw new ArithDifficultyError(`minDigits must be an integer in 1..${L.maxDigits}, got ${d.minDigits}`);
  if (!intIn(d.maxDigits, d.minDigits, L.maxDigits)) throw new ArithDifficultyError(`maxDigits must be an integer in minDigits..${L.maxDigits}, got ${d.maxDigits}`);
  if (d.operators.length === 0) throw new ArithDifficultyError('operators must not be empty');
  for (const op of d.operators) {
    if (!OPERATORS.includes(op)) throw new ArithDifficultyError(`unknown operator ${JSON.stringify(op)} (use + - *)`);
  }
  return d;
}
