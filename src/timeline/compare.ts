/**
 * What "the same message" and "the same group" mean, shared by the trie merge, its pairwise
 * reference and snap detection, so the three cannot disagree on equality.
 */
import type { CompareBy, Timeline, TimelineMessage } from './types';

/**
 * The key two messages must share to count as equal. Authors and logprobs are never part of it: a
 * message the model wrote in one request is the same context when the next request carries it as
 * input.
 */
export function messageKey(m: TimelineMessage, compareBy: CompareBy): string {
  return compareBy === 'text' ? m.text : tokenKey(m.tokenIds);
}

const KEY_CHUNK = 4096;
const keyUnits = new Uint16Array(2 * KEY_CHUNK);

/**
 * Token ids as a string usable as a Map key: each id (validated to 32 bits) as two UTF-16 code
 * units. Fixed width keeps [1, 23] and [12, 3] apart; String.fromCharCode keeps lone surrogates as
 * they are (a TextDecoder would not). About twice as fast as ids.join(',') and half the size.
 */
export function tokenKey(ids: readonly number[]): string {
  let key = '';
  for (let start = 0; start < ids.length; start += KEY_CHUNK) {
    const end = Math.min(ids.length, start + KEY_CHUNK);
    let w = 0;
    for (let x = start; x < end; x++) {
      const id = ids[x]!;
      keyUnits[w++] = id >>> 16;
      keyUnits[w++] = id & 0xffff;
    }
    key += String.fromCharCode.apply(null, keyUnits.subarray(0, w) as unknown as number[]);
  }
  return key;
}

export function sameMessage(a: TimelineMessage, b: TimelineMessage, compareBy: CompareBy): boolean {
  if (compareBy === 'text') return a.text === b.text;
  if (a.tokenIds.length !== b.tokenIds.length) return false;
  for (let x = 0; x < a.tokenIds.length; x++) if (a.tokenIds[x] !== b.tokenIds[x]) return false;
  return true;
}

/** Timelines merge only within one agent, and (unless tools are ignored) one tools list. */
export function sameGroup(a: Timeline, b: Timeline, ignoreTools: boolean): boolean {
  return a.agent === b.agent && (ignoreTools || a.tools === b.tools);
}

/** Number of leading messages a and b share under the compare key. */
export function sharedPrefix(a: Timeline, b: Timeline, compareBy: CompareBy): number {
  const n = Math.min(a.messages.length, b.messages.length);
  let k = 0;
  while (k < n && sameMessage(a.messages[k]!, b.messages[k]!, compareBy)) k++;
  return k;
}

export function copyMessage(m: TimelineMessage): TimelineMessage {
  return { author: m.author, text: m.text, tokenIds: m.tokenIds.slice(), logprobs: m.logprobs.slice() };
}

export function copyTimeline(t: Timeline): Timeline {
  return { id: t.id, agent: t.agent, tools: t.tools, messages: t.messages.map(copyMessage) };
}
