/**
 * The merge rule written as directly as possible: every pair of timelines is compared, O(n²) pairs
 * of up to L messages each. It is the reference the trie merge (merge.ts) is tested against and the
 * baseline of bench/merge.ts; do not use it on real batches.
 */
import { copyTimeline, sameGroup, sharedPrefix } from './compare';
import { detectSnapsPairwise } from './snap';
import { mergeStats } from './stats';
import { DEFAULT_MERGE_OPTIONS, type MergeOptions, type MergeResult, type Timeline } from './types';
import { validateTimelines } from './validate';

export function mergeTimelinesPairwise(timelines: readonly Timeline[], options: MergeOptions = DEFAULT_MERGE_OPTIONS): MergeResult {
  validateTimelines(timelines);
  const n = timelines.length;

  // i is a prefix of j: same group, no longer, and every message of i equal to j's at that index.
  const isPrefix = (i: number, j: number): boolean => {
    const a = timelines[i]!;
    const b = timelines[j]!;
    return sameGroup(a, b, options.ignoreTools) && a.messages.length <= b.messages.length && sharedPrefix(a, b, options.compareBy) === a.messages.length;
  };
  // i is absorbed into j; of identical timelines only the highest index is absorbed into no other.
  const absorbs = (i: number, j: number): boolean => i !== j && isPrefix(i, j) && (!isPrefix(j, i) || i < j);

  const survivor: boolean[] = [];
  for (let i = 0; i < n; i++) {
    survivor.push(true);
    for (let j = 0; j < n; j++) if (absorbs(i, j)) survivor[i] = false;
  }

  const out: Timeline[] = [];
  for (let j = 0; j < n; j++) {
    if (!survivor[j]) continue;
    const merged = copyTimeline(timelines[j]!);
    // Descending input index: the newest (highest-index) llm source of a message wins.
    for (let i = n - 1; i >= 0; i--) {
      if (survivor[i] || !isPrefix(i, j)) continue;
      const source = timelines[i]!.messages;
      for (let k = 0; k < source.length; k++) {
        const from = source[k]!;
        const to = merged.messages[k]!;
        if (from.author === 'llm' && to.author !== 'llm') {
          to.author = 'llm';
          to.tokenIds = from.tokenIds.slice();
          to.logprobs = from.logprobs.slice();
        }
      }
    }
    out.push(merged);
  }

  const absorbed: MergeResult['absorbed'] = [];
  for (let i = 0; i < n; i++) {
    if (survivor[i]) continue;
    const into: string[] = [];
    for (let j = 0; j < n; j++) if (survivor[j] && j !== i && isPrefix(i, j)) into.push(timelines[j]!.id);
    absorbed.push({ id: timelines[i]!.id, into });
  }

  return {
    timelines: out,
    absorbed,
    snaps: options.snapDetection ? detectSnapsPairwise(out, options) : [],
    stats: mergeStats(timelines, out),
  };
}
