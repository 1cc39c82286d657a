/**
 * Which problems a run may demonstrate, train on, choose settings by and report results on.
 *
 * Two schemes (task.split):
 *  - 'subproblem' (the default): every act of a problem's oracle plan (one operation on two operands;
 *    for + and * the operands in either order, so 7+25 and 25+7 are one act) belongs to one part by a
 *    hash of the act: train 80%, validation 10%, test 10%. A problem belongs to a part when all of its
 *    acts do; other problems are never drawn. So no act a test problem asks for appears in any
 *    demonstration, RL prompt or validation problem. Training problems are divided once more by the
 *    hash of the whole expression: SFT demonstrations ('sft') and RL prompts ('rl'), so RL's prompts
 *    are fresh problems with no demonstration.
 *  - 'expression' (runs recorded before issue 24): the hash of the whole expression, 10% held out
 *    ('heldout', splitOf in problem.ts); SFT and RL draw from one 'train' split, validation and test
 *    from 'heldout' with different seeds. Acts are shared across the split.
 */
import { mulberry32, pick, randInt, uniformHash, type Rng } from '../../domain/rng';
import { ArithDifficultyError, validateDifficulty, type ArithDifficulty } from './difficulty';
import { oraclePlan } from './oracle';
import { generateProblem, generateProblems, makeProblem, randomTerm, signedProducts, withinCalcLimits, type ArithProblem } from './problem';

export type SplitScheme = 'subproblem' | 'expression';
/** The parts of the 'subproblem' scheme. */
export type ProblemPart = 'sft' | 'rl' | 'validation' | 'test';

/** Per cent of acts in validation and in test (the rest are training acts). */
export const VALIDATION_ACT_PERCENT = 10;
export const TEST_ACT_PERCENT = 10;

/**
 * The act's identity: operator and operands as written, the operands sorted for + and * (either
 * order is the same sub-problem), in order for -. "25+7" and "7+25" -> "+:7,25"; "-8-31" -> "-:-8,31".
 */
export function actKey(expression: string): string {
  const m = /^(-?\d+)([+*-])(\d+)$/.exec(expression);
  if (!m) throw new RangeError(`not a two-operand act: ${JSON.stringify(expression)}`);
  const [, a, op, b] = m as unknown as [string, string, string, string];
  const operands = op === '-' ? [a, b] : [a, b].sort((x, y) => Number(x) - Number(y) || x.localeCompare(y));
  return `${op}:${operands.join(',')}`;
}

export type ActPart = 'train' | 'validation' | 'test';

export function actPart(expression: string): ActPart {
  const u = uniformHash(`act:${actKey(expression)}`) * 100;
  if (u < VALIDATION_ACT_PERCENT) return 'validation';
  if (u < VALIDATION_ACT_PERCENT + TEST_ACT_PERCENT) return 'test';
  return 'train';
}

/** The acts of the problem's oracle plan, in order. */
export function problemActs(problem: ArithProblem): string[] {
  return oraclePlan(problem).flatMap((turn) => (turn.kind === 'acts' ? turn.acts.map((a) => a.expression) : []));
}

/** The part of the 'subproblem' scheme the problem belongs to, or undefined when its acts are in different parts. */
export function problemPart(problem: ArithProblem): ProblemPart | undefined {
  const parts = new Set(problemActs(problem).map(actPart));
  if (parts.size !== 1) return undefined;
  const [part] = parts as unknown as [ActPart];
  if (part !== 'train') return part;
  return uniformHash(`sft-rl:${problem.expression}`) < 0.5 ? 'sft' : 'rl';
}

export interface DrawProblemsOptions {
  seed: number;
  count: number;
  scheme: SplitScheme;
  part: ProblemPart;
  difficulty: ArithDifficulty;
  /** No problem twice (evaluation sets, so n in a standard error is the number of problems). */
  distinct?: boolean;
}

/** Draws per problem before giving up: a 4-term test problem needs all three acts in test (1 in 1,000). */
const MAX_ATTEMPTS = 200_000;

/**
 * `count` problems of a part, the same for the same options on every machine. In the 'subproblem'
 * scheme the number of terms is drawn first and only the operands are redrawn until the problem
 * lies in the part, so every part keeps the difficulty's mix of lengths (longer problems are rarer
 * in a part, since all their acts must agree).
 */
export function drawProblems(opts: DrawProblemsOptions): ArithProblem[] {
  if (opts.scheme === 'expression') {
    const split = opts.part === 'sft' || opts.part === 'rl' ? 'train' : 'heldout';
    if (!opts.distinct) return generateProblems({ seed: opts.seed, count: opts.count, split, difficulty: opts.difficulty });
    return distinctDraws(opts, (rng) => generateProblem(rng, opts.difficulty, split));
  }
  validateDifficulty(opts.difficulty);
  const draw = (rng: Rng): ArithProblem => {
    const d = opts.difficulty;
    const n = randInt(rng, d.minTerms, d.maxTerms);
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const terms = Array.from({ length: n }, () => randomTerm(rng, d));
      const operators = Array.from({ length: n - 1 }, () => pick(rng, d.operators));
      if (!withinCalcLimits(signedProducts(terms, operators))) continue;
      const problem = makeProblem(terms, operators);
      if (problemPart(problem) === opts.part) return problem;
    }
    throw new ArithDifficultyError(`no ${n}-term ${opts.part} problem after ${MAX_ATTEMPTS} draws (all its acts must be ${opts.part} acts); lower maxTerms, or use task.split: expression`);
  };
  return opts.distinct ? distinctDraws(opts, draw) : Array.from({ length: opts.count }, ((rng) => () => draw(rng))(mulberry32(opts.seed)));
}

/** `count` different problems, or an error saying how many the distribution has room for. */
function distinctDraws(opts: DrawProblemsOptions, draw: (rng: Rng) => ArithProblem): ArithProblem[] {
  const rng = mulberry32(opts.seed);
  const seen = new Map<string, ArithProblem>();
  // Repeats become common only when the part is nearly exhausted; then stop and say so.
  for (let tries = 0; seen.size < opts.count && tries < opts.count * 50; tries++) {
    const p = draw(rng);
    if (!seen.has(p.expression)) seen.set(p.expression, p);
  }
  if (seen.size < opts.count) {
    throw new ArithDifficultyError(`only ${seen.size} distinct ${opts.part} problems found for ${opts.count} wanted; ask for fewer or widen task difficulty`);
  }
  return [...seen.values()];
}
