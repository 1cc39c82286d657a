/**
 * A merged timeline as a training Sample. The loss mask follows the authors: after merging, every
 * message the model wrote (in this request or in an absorbed earlier one) is llm and carries the
 * engine's ids and logprobs, so one sample trains on all of an agent's turns of a conversation.
 */
import type { Sample } from '../domain/types';
import type { Timeline } from './types';

/**
 * Prompt: the tokens before the first llm message. Response: all tokens from it on, env tokens
 * between the model's turns (tool results, user turns, template tokens) included with loss mask 0
 * and logprob 0; llm tokens with loss mask 1 and the engine's logprobs. A timeline with no llm
 * message has nothing to train on: null.
 */
export function timelineToSample(t: Timeline, meta: Pick<Sample, 'reward' | 'metadata'>): Sample | null {
  const first = t.messages.findIndex((m) => m.author === 'llm');
  if (first < 0) return null;
  const promptTokens: number[] = [];
  for (let k = 0; k < first; k++) for (const id of t.messages[k]!.tokenIds) promptTokens.push(id);
  const responseTokens: number[] = [];
  const logprobs: number[] = [];
  const lossMask: number[] = [];
  for (let k = first; k < t.messages.length; k++) {
    const m = t.messages[k]!;
    const llm = m.author === 'llm';
    for (let x = 0; x < m.tokenIds.length; x++) {
      responseTokens.push(m.tokenIds[x]!);
      logprobs.push(llm ? m.logprobs[x]! : 0);
      lossMask.push(llm ? 1 : 0);
    }
  }
  return { promptTokens, responseTokens, logprobs, lossMask, reward: meta.reward, metadata: { ...meta.metadata } };
}
