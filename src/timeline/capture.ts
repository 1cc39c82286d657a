/**
 * Capture: one request to the policy as a timeline. The prompt is split into the messages the
 * episode driver built it from (task prompt, earlier model turns as they read in context, tool and
 * environment text), each with the token ids the engine saw for it; the output is the engine's
 * token ids and logprobs, authored llm, with its text as the chat template renders it into the
 * contexts that follow (so a later request's copy of it compares equal by text).
 */
import type { Timeline, TimelineMessage } from './types';

/** An input message: its text and the ids of it inside the prompt the engine encoded. */
export interface PromptMessage {
  text: string;
  tokenIds: number[];
}

/**
 * Splits `prompt` at `starts` (character offsets of each message, the first 0) and assigns each
 * piece its ids by encoding it alone. The pieces' ids must concatenate to exactly the ids the engine
 * encoded the whole prompt to (the protocol keeps message boundaries token boundaries); when they do
 * not, the prompt is kept as one message with the engine's ids, so a timeline never claims ids the
 * model did not see. Empty pieces are dropped.
 */
export function splitPrompt(prompt: string, starts: readonly number[], promptTokenIds: readonly number[], encode: (text: string) => number[]): PromptMessage[] {
  const bounds = [...new Set([0, ...starts.filter((s) => s > 0 && s < prompt.length)])].sort((a, b) => a - b);
  const texts = bounds.map((b, i) => prompt.slice(b, bounds[i + 1] ?? prompt.length)).filter((t) => t !== '');
  const pieces = texts.map((text) => ({ text, tokenIds: encode(text) }));
  const joined = pieces.flatMap((p) => p.tokenIds);
  const same = joined.length === promptTokenIds.length && joined.every((id, i) => id === promptTokenIds[i]);
  return same ? pieces : [{ text: prompt, tokenIds: [...promptTokenIds] }];
}

export interface CapturedRequest {
  id: string;
  agent: string;
  tools: string;
  prompt: readonly PromptMessage[];
  output: { text: string; tokenIds: readonly number[]; logprobs: readonly number[] };
}

/** The request as a timeline: input messages authored env, the output authored llm. */
export function captureTimeline(r: CapturedRequest): Timeline {
  const input: TimelineMessage[] = r.prompt.map((m) => ({ author: 'env', text: m.text, tokenIds: [...m.tokenIds], logprobs: m.tokenIds.map(() => 0) }));
  const output: TimelineMessage = { author: 'llm', text: r.output.text, tokenIds: [...r.output.tokenIds], logprobs: [...r.output.logprobs] };
  return { id: r.id, agent: r.agent, tools: r.tools, messages: [...input, output] };
}
