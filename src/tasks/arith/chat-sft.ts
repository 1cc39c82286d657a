/**
 * SFT demonstrations of chat mode (task.chat, docs/chat.md): the oracle's answer to a problem as the
 * chat episode a policy would play, built with the rollout's own rules (src/chat TokenConversation):
 * the problem rendered as the first prompt, each assistant turn appended as the ids of the text the
 * model writes after the generation prompt (Hermes tool calls, the end-of-turn token), each tool
 * result appended as the rendered delta. So SFT trains exactly the ids RL later keeps, with the same
 * mask: model turns 1, prompt and environment 0.
 */
import { formatHermesToolCalls, TokenConversation, type ChatModel, type ConversationOptions } from '../../chat';
import { CALC_TOOL_NAME, chatProblemMessages } from './chat-episode';
import type { ArithProblem } from './problem';
import { demonstratesToolUse } from './sft';

export interface ChatDemonstration {
  tokens: number[];
  lossMask: number[];
  usesTool: boolean;
}

/** The text a model writes for a turn: an empty think block first when the template thinks, the end-of-turn token last. */
function modelTurnText(model: ChatModel, opts: ConversationOptions, body: string): string {
  return `${opts.enableThinking === false ? '' : '<think>\n\n</think>\n\n'}${body}${model.tokenizer.eosToken}`;
}

/**
 * The demonstration of one problem: with the calculator (calc of the whole expression, its value,
 * then the answer) on a share toolUseRate of problems (by hash, as the Plan/Act demonstrations
 * choose), else the answer at once.
 */
export function chatDemonstration(problem: ArithProblem, model: ChatModel, opts: ConversationOptions, toolUseRate: number): ChatDemonstration {
  const conv = new TokenConversation(model, chatProblemMessages(problem.expression), opts);
  const usesTool = demonstratesToolUse(problem, '1', toolUseRate);
  conv.nextPrompt();
  if (usesTool) {
    const call = formatHermesToolCalls([{ name: CALC_TOOL_NAME, arguments: { expression: problem.expression } }]);
    conv.addModelTurn(model.tokenizer.encode(modelTurnText(model, opts, call)));
    conv.addMessages({ role: 'tool', content: String(problem.answer) });
    conv.nextPrompt();
  }
  conv.addModelTurn(model.tokenizer.encode(modelTurnText(model, opts, String(problem.answer))));
  return { tokens: [...conv.ids], lossMask: [...conv.modelMask], usesTool };
}
