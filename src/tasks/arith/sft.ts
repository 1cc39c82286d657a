/**
 * Supervised demonstrations from the oracle plan. Segments mark who wrote each piece of text:
 * train=true for model-written text (EOS included), train=false for prompts and environment text,
 * so tokenizing segment by segment yields an exact loss mask.
 */
import type { PlanActRole } from '../../planact/episode-types';
import { closeTurn, formatActs, formatAnswer, formatResults, formatToolCall, formatToolResult } from '../../planact/protocol';
import { arithActorPrompt, arithPlannerPrompt } from './formats';
import { oraclePlan, ORACLE_DEFAULT_MAX_ACTS } from './oracle';
import type { ArithProblem } from './problem';
import { fnv1a32 } from '../../domain/rng';

export interface SftSegment {
  text: string;
  train: boolean;
}

export interface SftExample {
  role: PlanActRole;
  problemId: string;
  /** For actor examples: the planner turn and act they belong to. */
  turn?: number;
  actId?: string;
  segments: SftSegment[];
}

export function sftExampleText(example: Pick<SftExample, 'segments'>): string {
  return example.segments.map((s) => s.text).join('');
}

export interface DemonstrationStyle {
  maxActsPerTurn?: number;
  /**
   * Share of acts whose demonstration calls the calculator (default 1). The others write the right
   * value directly, as a person doing the sum in their head would: correct text the policy can only
   * imitate by doing the arithmetic itself. Chosen per act by a hash, so the dataset is fixed.
   */
  toolUseRate?: number;
}

/** Whether the demonstration of this act uses the calculator (deterministic in problem and act). */
export function demonstratesToolUse(problem: ArithProblem, actId: string, toolUseRate: number): boolean {
  if (toolUseRate >= 1) return true;
  return fnv1a32(`tool-use:${problem.expression}:${actId}`) / 2 ** 32 < toolUseRate;
}

/** One planner example (the whole multi-turn conversation) and one actor example per act. */
export function oracleSftExamples(problem: ArithProblem, style: DemonstrationStyle | number = {}): SftExample[] {
  const { maxActsPerTurn = ORACLE_DEFAULT_MAX_ACTS, toolUseRate = 1 } = typeof style === 'number' ? { maxActsPerTurn: style } : style;
  const planner: SftSegment[] = [{ text: arithPlannerPrompt(problem.expression), train: false }];
  const actors: SftExample[] = [];
  oraclePlan(problem, maxActsPerTurn).forEach((turn, index) => {
    if (turn.kind === 'answer') {
      planner.push({ text: closeTurn(formatAnswer(turn.value)), train: true });
      return;
    }
    planner.push({ text: closeTurn(formatActs(turn.acts)), train: true });
    planner.push({ text: formatResults(turn.acts.map((a) => ({ id: a.id, value: a.result }))), train: false });
    for (const act of turn.acts) {
      actors.push({
        role: 'actor',
        problemId: problem.id,
        turn: index + 1,
        actId: act.id,
        segments: demonstratesToolUse(problem, act.id, toolUseRate)
          ? [
              { text: arithActorPrompt(act.expression), train: false },
              { text: formatToolCall(act.expression), train: true },
              { text: formatToolResult(act.result), train: false },
              { text: closeTurn(act.result), train: true },
            ]
          : [
              { text: arithActorPrompt(act.expression), train: false },
              { text: closeTurn(act.result), train: true },
            ],
      });
    }
  });
  return [{ role: 'planner', problemId: problem.id, segments: planner }, ...actors];
}
