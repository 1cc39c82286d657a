/** Per-token credit of a merged timeline: which call wrote each response token, and that call's value. */
import type { Timeline } from './types';

/**
 * Per response token of a merged timeline's sample, the value of the call that wrote it: the k-th
 * llm message is the output of the k-th of the calls merged into it (a chain's calls, in order,
 * ending with the survivor's own call at `lastIndex` of `values`); env tokens get 0 (they are masked).
 */
export function segmentTokenValues(t: Timeline, values: readonly number[], lastIndex: number): number[] {
  const llm = t.messages.filter((m) => m.author === 'llm').length;
  const first = lastIndex - llm + 1;
  if (first < 0) throw new Error(`timeline ${t.id}: ${llm} model messages but only ${lastIndex + 1} calls before it`);
  const out: number[] = [];
  let k = first;
  let seen = false;
  for (const m of t.messages) {
    if (m.author === 'llm') seen = true;
    if (!seen) continue;
    const v = m.author === 'llm' ? values[k++]! : 0;
    for (let x = 0; x < m.tokenIds.length; x++) out.push(v);
  }
  return out;
}
