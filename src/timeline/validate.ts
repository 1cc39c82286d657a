/**
 * Input checks for timelines. Captured timelines come from engines and third-party agent code, so a
 * malformed one must fail loudly with the timeline and field it concerns rather than merge wrongly
 * (a logprob list one short would shift every later token's logprob in training).
 */
import type { Timeline, TimelineMessage } from './types';

export class TimelineError extends Error {
  override readonly name = 'TimelineError';
  constructor(
    /** Id of the offending timeline ('' when it has none). */
    readonly timelineId: string,
    /** Path of the offending field, e.g. `messages[3].logprobs`. */
    readonly field: string,
    readonly problem: string,
  ) {
    super(`timeline ${JSON.stringify(timelineId)}: ${field}: ${problem}`);
  }
}

/**
 * Throws a TimelineError for the first problem found: a missing or duplicated id, an agent or tools
 * that is not a string, no messages, an unknown author, token ids that are not integers in
 * [0, 2³²) (compare.ts packs each into two UTF-16 units), logprobs that are not numbers, or token ids and logprobs of different lengths.
 * Cost: one pass over every token.
 */
const at = (k: number, field: string): string => `messages[${k}].${field}`;

export function validateTimelines(timelines: readonly Timeline[]): void {
  if (!Array.isArray(timelines)) throw new TimelineError('', '(input)', 'expected an array of timelines');
  const seen = new Set<string>();
  for (const t of timelines) {
    const id = typeof t?.id === 'string' ? t.id : '';
    if (typeof t?.id !== 'string' || t.id === '') throw new TimelineError(id, 'id', 'must be a non-empty string');
    if (seen.has(id)) throw new TimelineError(id, 'id', 'duplicated: ids must be unique among the timelines merged together');
    seen.add(id);
    if (typeof t.agent !== 'string') throw new TimelineError(id, 'agent', 'must be a string');
    if (typeof t.tools !== 'string') throw new TimelineError(id, 'tools', "must be a string ('' for no tools)");
    if (!Array.isArray(t.messages) || t.messages.length === 0) {
      throw new TimelineError(id, 'messages', 'needs at least one message (the request output)');
    }
    // Plain loops and field paths built only on failure: this runs over every token of a batch.
    const messages: readonly TimelineMessage[] = t.messages;
    for (let k = 0; k < messages.length; k++) {
      const m = messages[k]!;
      if (m.author !== 'llm' && m.author !== 'env') throw new TimelineError(id, at(k, 'author'), `must be 'llm' or 'env', got ${JSON.stringify(m.author)}`);
      if (typeof m.text !== 'string') throw new TimelineError(id, at(k, 'text'), 'must be a string');
      const tokenIds: unknown = m.tokenIds;
      const logprobs: unknown = m.logprobs;
      if (!Array.isArray(tokenIds)) throw new TimelineError(id, at(k, 'tokenIds'), 'must be an array');
      if (!Array.isArray(logprobs)) throw new TimelineError(id, at(k, 'logprobs'), 'must be an array');
      if (tokenIds.length !== logprobs.length) throw new TimelineError(id, at(k, 'logprobs'), `has ${logprobs.length} entries for ${tokenIds.length} token ids`);
      for (let x = 0; x < tokenIds.length; x++) {
        const tokenId = tokenIds[x] as number;
        // x >>> 0 === x holds exactly for the numbers that are integers in [0, 2³²).
        if (tokenId >>> 0 !== tokenId) throw new TimelineError(id, at(k, `tokenIds[${x}]`), `not a token id (an integer in [0, 2³²)): ${String(tokenId)}`);
        const lp = logprobs[x] as number;
        if (typeof lp !== 'number' || lp !== lp) throw new TimelineError(id, at(k, `logprobs[${x}]`), `not a number: ${String(lp)}`);
      }
    }
  }
}
