import type { Timeline, TimelineMessage } from '../../src/timeline';

/** Token ids of a test string: its character codes (distinct texts give distinct ids). */
export function ids(text: string): number[] {
  return Array.from(text, (c) => c.codePointAt(0)!);
}

export function env(text: string, tokenIds: number[] = ids(text)): TimelineMessage {
  return { author: 'env', text, tokenIds, logprobs: tokenIds.map(() => 0) };
}

/** An llm message; logprobs default to -(position + 1) / 10 so copies are recognisable. */
export function llm(text: string, tokenIds: number[] = ids(text), logprobs: number[] = tokenIds.map((_, x) => -(x + 1) / 10)): TimelineMessage {
  return { author: 'llm', text, tokenIds, logprobs };
}

export function tl(id: string, messages: TimelineMessage[], opts: { agent?: string; tools?: string } = {}): Timeline {
  return { id, agent: opts.agent ?? 'agent', tools: opts.tools ?? '', messages };
}

/** Deep snapshot, to check an input was not mutated. */
export function snapshot<T>(x: T): T {
  return JSON.parse(JSON.stringify(x)) as T;
}
