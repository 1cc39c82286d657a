/**
 * A scripted stand-in for the policy that plays the oracle in both roles. It lets the episode
 * driver, workflows and benchmarks run end to end (reward 1) without a trained model.
 */
import type { GenerateMeta, GenerateOutput, PlanActRole } from '../../planact/episode-types';
import { formatActs, formatAnswer, formatToolCall, TOOL_RESULT_CLOSE, TOOL_RESULT_OPEN } from '../../planact/protocol';
import { oraclePlan, ORACLE_DEFAULT_MAX_ACTS } from './oracle';
import type { ArithProblem } from './problem';

export type OracleGenerate = (role: PlanActRole, prompt: string, meta: GenerateMeta) => Promise<GenerateOutput>;

const ACTOR_PROMPT = /^Evaluate: (.*)\n/;

/** Oracle plan by turn number for the planner; "call the calculator, then copy its result" for the actor. */
export function oracleGenerate(problem: ArithProblem, maxActsPerTurn: number = ORACLE_DEFAULT_MAX_ACTS): OracleGenerate {
  const plan = oraclePlan(problem, maxActsPerTurn);
  return async (role, prompt, meta) => {
    if (role === 'planner') {
      const turn = plan[meta.turn - 1];
      if (turn === undefined) return { text: 'ANSWER: ?\n', finishReason: 'eos' };
      return { text: turn.kind === 'answer' ? formatAnswer(turn.value) : formatActs(turn.acts), finishReason: 'eos' };
    }
    const open = prompt.lastIndexOf(TOOL_RESULT_OPEN);
    if (open < 0) {
      const expression = ACTOR_PROMPT.exec(prompt)?.[1] ?? '';
      return { text: formatToolCall(expression), finishReason: 'stop' };
    }
    const close = prompt.indexOf(TOOL_RESULT_CLOSE, open);
    return { text: prompt.slice(open + TOOL_RESULT_OPEN.length, close < 0 ? undefined : close), finishReason: 'eos' };
  };
}
