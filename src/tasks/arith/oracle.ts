/**
 * The oracle plan: the demonstration the policy is fitted on before RL.
 *
 * Rule (correct under precedence, and built only by copying text the planner can see):
 *  1. View the expression as a sum of signed products: 2*3+4*5*6-7*2 -> [2*3] [4*5*6] [-7*2].
 *     A subtracted product carries its minus on its first factor.
 *  2. While some product has more than one factor: in every such product pair adjacent factors
 *     left to right ("2*3", "4*5", "-7*2"); an odd last factor is carried to the next turn.
 *  3. Then pair adjacent summands left to right: "a+b", or "a-b" when b is written "-b"
 *     ("17-25", "-8-31", "42-39"); an odd last summand is carried.
 *  4. One value left: ANSWER with it.
 * Every operand is the literal text from the prompt or a RESULT line, and each turn's acts are
 * independent, so they may run concurrently. Act ids count up across turns (1, 2, then 3, ...).
 */
import { evaluateExpression } from './calc';
import { signedProducts, type ArithProblem } from './problem';

export interface OracleAct {
  id: string;
  expression: string;
  /** What the actor answers (and the calculator returns). */
  result: string;
}

export type OracleTurn = { kind: 'acts'; acts: OracleAct[] } | { kind: 'answer'; value: string };

/** A value as the planner writes it: literal text from the prompt or a RESULT line. */
interface Operand {
  text: string;
}

/** Enough for the largest supported problem (8 terms) to pair everything each turn. */
export const ORACLE_DEFAULT_MAX_ACTS = 4;

function operandsOf(problem: ArithProblem): Operand[][] {
  return signedProducts(problem.terms, problem.operators).map((factors) =>
    // Literal text, so "5-0" stays "-0" rather than collapsing to "0".
    factors.map((f, i) => ({ text: i === 0 && (f < 0 || Object.is(f, -0)) ? `-${Math.abs(f)}` : String(f) })),
  );
}

function joinSum(a: Operand, b: Operand): string {
  return b.text.startsWith('-') ? `${a.text}${b.text}` : `${a.text}+${b.text}`;
}

/** Pairs adjacent items of `items` into acts (at most `budget`), returning the list after results. */
function pairUp<T>(
  items: readonly T[],
  budget: { left: number },
  makeAct: (a: T, b: T) => string,
  emit: (expression: string) => T,
): T[] {
  const out: T[] = [];
  let i = 0;
  for (; i + 1 < items.length && budget.left > 0; i += 2) {
    budget.left--;
    out.push(emit(makeAct(items[i]!, items[i + 1]!)));
  }
  return out.concat(items.slice(i));
}

export function oraclePlan(problem: ArithProblem, maxActsPerTurn: number = ORACLE_DEFAULT_MAX_ACTS): OracleTurn[] {
  if (!Number.isInteger(maxActsPerTurn) || maxActsPerTurn < 1) throw new RangeError('maxActsPerTurn must be a positive integer');
  let summands = operandsOf(problem);
  const turns: OracleTurn[] = [];
  let nextId = 1;
  for (;;) {
    const acts: OracleAct[] = [];
    const emit = (expression: string): Operand => {
      const result = String(evaluateExpression(expression));
      acts.push({ id: String(nextId++), expression, result });
      return { text: result };
    };
    const budget = { left: maxActsPerTurn };
    if (summands.some((factors) => factors.length > 1)) {
      summands = summands.map((factors) => pairUp(factors, budget, (a, b) => `${a.text}*${b.text}`, emit));
    } else if (summands.length > 1) {
      summands = pairUp(summands, budget, (a, b) => joinSum(a[0]!, b[0]!), (e) => [emit(e)]);
    } else {
      turns.push({ kind: 'answer', value: String(Number(summands[0]![0]!.text)) });
      return turns;
    }
    turns.push({ kind: 'acts', acts });
  }
}
