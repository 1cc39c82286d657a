/**
 * The arithmetic task as a chat conversation (task.chat, docs/chat.md): the problem is a user
 * message, the calculator the OpenAI function tool `calc` ({"expression"}), the model's turns read as
 * vLLM's hermes tool parser reads them (src/chat parseModelTurn). One pure driver plays an episode
 * against an io that generates the next model turn: the rollout workflow's io is a chat-turn
 * activity (the conversation kept in the blob store), the evaluation's an engine in-process.
 *
 * What the environment answers, as an OpenAI-tools agent loop would:
 *  - tool calls: one tool message per call, in order (the value, or "error: ..." for an unknown tool,
 *    arguments without a string `expression`, or a calculator refusal);
 *  - a turn whose `<tool_call>` blocks did not parse (vLLM then returns no tool calls at all, the
 *    text as content): a user message saying so, counted as malformed;
 *  - anything else ends the episode, its content read as the answer.
 */
import type { ChatMessage, ParsedTurn, ToolCallProblemKind, ToolSpec } from '../../chat';
import { calc, CalcInputError } from './calc';
import { arithReward } from './reward';
import type { ArithProblem } from './problem';

export const CALC_TOOL_NAME = 'calc';

export const CALC_TOOL: ToolSpec = {
  type: 'function',
  function: {
    name: CALC_TOOL_NAME,
    description: 'Evaluate an integer arithmetic expression with +, - and *.',
    parameters: { type: 'object', properties: { expression: { type: 'string', description: 'e.g. 17+25*3' } }, required: ['expression'] },
  },
};

export const CHAT_TOOLS: readonly ToolSpec[] = [CALC_TOOL];

/** The episode's first messages (the SFT demonstrations', the rollout's and the chat agent's: scripts/agent-episode.ts). */
export function chatProblemMessages(expression: string): ChatMessage[] {
  return [{ role: 'user', content: `Compute: ${expression}` }];
}

/** What a model turn needs the driver to know: the parse, and how the generation ended. */
export interface ChatTurnResult {
  parsed: Pick<ParsedTurn, 'content' | 'toolCalls' | 'malformed'>;
  finishReason: string;
}

export interface ChatEpisodeIO {
  /** Appends `env` (empty on the first turn: the problem's messages open the conversation) and generates the model's next turn. */
  turn(env: ChatMessage[]): Promise<ChatTurnResult>;
  /** The calculator's value, or its refusal (the tool's error text). Cancellation and other failures throw. */
  calc(expression: string): Promise<string | { error: string }>;
}

export interface ChatEpisodeLimits {
  /** Model turns at most; an episode still calling tools after them ends unanswered. */
  maxTurns: number;
}

export type ChatEpisodeFailure = 'max-turns' | 'no-answer' | 'truncated';

export interface ChatEpisodeOutcome {
  answer: string | null;
  reward: number;
  turns: number;
  /** Tool calls answered (calculator and unknown tools). */
  toolCalls: number;
  /** Tool-call blocks that did not parse, calls of tools not offered, calls without a string expression. */
  malformedToolCalls: number;
  failure?: ChatEpisodeFailure;
}

const ANSWER = /(-?\d{1,15})\s*$/;

/** The number a final turn answers with: its content's last integer (a bare "42", or "... is 42"). */
export function chatAnswer(content: string | null): string | null {
  return ANSWER.exec((content ?? '').trim())?.[1] ?? null;
}

/** A final turn's reward: its content read by chatAnswer, scored by the task's reward. */
export function chatReward(problem: Pick<ArithProblem, 'answer'>, content: string | null): number {
  return arithReward(problem, chatAnswer(content));
}

/**
 * An outside agent's answer (rollout.kind agent): in chat mode read as a chat episode's final turn
 * is (chatReward), so RL on the agent's episodes and the chat evaluation score one format alike;
 * otherwise a plain integer, as the Plan/Act gateway's episodes always were.
 */
export function agentAnswerReward(problem: Pick<ArithProblem, 'answer'>, answer: string | null, chat: boolean): number {
  return chat ? chatReward(problem, answer) : arithReward(problem, answer);
}

/** The calculator run in-process, its refusal as the tool's error (ChatEpisodeIO.calc's contract). */
export function calcOrRefusal(expression: string): string | { error: string } {
  try {
    return calc(expression);
  } catch (err) {
    if (err instanceof CalcInputError) return { error: err.message };
    throw err;
  }
}

/** The calc call's expression, or why the arguments do not hold one. */
function expressionOf(args: string): { expression: string } | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(args);
  } catch {
    return { error: 'arguments are not JSON' };
  }
  const e = typeof v === 'object' && v !== null ? (v as { expression?: unknown }).expression : undefined;
  return typeof e === 'string' ? { expression: e } : { error: 'arguments need a string "expression"' };
}

/**
 * The environment's answer to a turn whose `<tool_call>` could not be read (vLLM returns such a turn
 * as content, no tool_calls): a user message naming the problem, so the model may retry. The episode
 * driver and the chat agent (src/gateway/arith-agent.ts) send the same text.
 */
export function unreadableCallMessage(kind: ToolCallProblemKind): string {
  return `Your tool call could not be read (${kind}). Call ${CALC_TOOL_NAME} with {"expression": "..."} or answer with the number.`;
}

export async function playChatEpisode(problem: Pick<ArithProblem, 'answer'>, io: ChatEpisodeIO, limits: ChatEpisodeLimits): Promise<ChatEpisodeOutcome> {
  let env: ChatMessage[] = [];
  let toolCalls = 0;
  let malformed = 0;
  for (let turn = 1; turn <= limits.maxTurns; turn++) {
    const { parsed, finishReason } = await io.turn(env);
    // Unknown tools are counted by the parser and answered below, once each.
    malformed += parsed.malformed.filter((m) => m.kind !== 'unknown-tool').length;
    if (parsed.toolCalls.length > 0) {
      env = [];
      for (const call of parsed.toolCalls) {
        toolCalls++;
        env.push({ role: 'tool', content: await chatToolAnswer(call, (e) => io.calc(e), () => malformed++) });
      }
      continue;
    }
    if (parsed.malformed.length > 0) {
      env = [{ role: 'user', content: unreadableCallMessage(parsed.malformed[0]!.kind) }];
      continue;
    }
    const answer = chatAnswer(parsed.content);
    const failure: ChatEpisodeFailure | undefined = answer !== null ? undefined : finishReason === 'length' ? 'truncated' : 'no-answer';
    return { answer, reward: chatReward(problem, parsed.content), turns: turn, toolCalls, malformedToolCalls: malformed, ...(failure ? { failure } : {}) };
  }
  return { answer: null, reward: 0, turns: limits.maxTurns, toolCalls, malformedToolCalls: malformed, failure: 'max-turns' };
}

/**
 * The tool message's content for one call: the calculator's value as it prints it (`String(value)`,
 * what the SFT demonstrations show), or "error: ..." for a tool not offered, arguments without a
 * string expression, or a calculator refusal (each counted as malformed but the last). The episode
 * driver and the chat agent (src/gateway/arith-agent.ts) answer with it alike.
 */
export async function chatToolAnswer(
  call: { name: string; arguments: string },
  calcTool: (expression: string) => Promise<string | { error: string }> | string | { error: string },
  countMalformed: () => void = () => undefined,
): Promise<string> {
  if (call.name !== CALC_TOOL_NAME) {
    countMalformed();
    return `error: no tool named ${JSON.stringify(call.name)} (offered: ${CALC_TOOL_NAME})`;
  }
  const args = expressionOf(call.arguments);
  if ('error' in args) {
    countMalformed();
    return `error: ${args.error}`;
  }
  const value = await calcTool(args.expression);
  return typeof value === 'string' ? value : `error: ${value.error}`;
}
