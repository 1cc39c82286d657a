/**
 * Retokenization drift repair.
 *
 * An agent framework receives the model's reply as text and sends it back in its next request; the
 * chat template then encodes that text again. Encoding decoded text does not always give back the
 * ids that were sampled: the model may have sampled "hel"+"lo" where the tokenizer's merges give
 * "hello" (vllm-project/vllm PR 22587). Under compareBy 'token' the next request then no longer
 * starts with the previous one, so neither merges nor shares its prefix; and even under 'text' the
 * env copy of the reply holds ids the model never produced. The repair puts the engine's ids back.
 */
import type { Timeline, TimelineMessage } from './types';
import { validateTimelines } from './validate';

export interface DriftFix {
  /** Same order as the input; timelines needing no repair are the input objects themselves. */
  timelines: Timeline[];
  /** Env messages whose token ids were replaced. */
  repaired: number;
}

/**
 * Within each agent, in capture (input) order: an env input message (not the last one) whose text is
 * exactly the text of an earlier timeline's output (its last message, author llm) but whose token
 * ids differ takes that output's ids, with logprobs 0; it stays env (merging copies the llm author
 * and logprobs from the earlier timeline when it absorbs it). When several earlier outputs have that
 * text, the most recent one is used: a multi-turn agent feeds back its latest reply. An env message
 * that merely happens to equal an earlier reply's text also gets the reply's ids; they decode to
 * the same text, so the context the model saw is unchanged. The input is never mutated.
 * Cost: O(total size), one map lookup per env message.
 */
export function fixRetokenizationDrift(timelines: readonly Timeline[]): DriftFix {
  validateTimelines(timelines);
  const outputs = new Map<string, Map<string, number[]>>(); // agent -> output text -> engine ids
  let repaired = 0;
  const result = timelines.map((t) => {
    let seen = outputs.get(t.agent);
    if (seen === undefined) outputs.set(t.agent, (seen = new Map()));
    let messages: TimelineMessage[] | undefined;
    for (let k = 0; k < t.messages.length - 1; k++) {
      const m = t.messages[k]!;
      if (m.author !== 'env') continue;
      const engineIds = seen.get(m.text);
      if (engineIds === undefined || sameIds(engineIds, m.tokenIds)) continue;
      messages ??= t.messages.slice();
      messages[k] = { author: 'env', text: m.text, tokenIds: engineIds.slice(), logprobs: new Array<number>(engineIds.length).fill(0) };
      repaired++;
    }
    const output = t.messages[t.messages.length - 1]!;
    if (output.author === 'llm') seen.set(output.text, output.tokenIds);
    return messages === undefined ? t : { ...t, messages };
  });
  return { timelines: result, repaired };
}

function sameIds(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let x = 0; x < a.length; x++) if (a[x] !== b[x]) return false;
  return true;
}
