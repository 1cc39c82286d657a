import { mulberry32 } from '../../src/domain/rng';
import { mergeTimelines, mergeTimelinesPairwise, type MergeOptions, type MergeResult, type SnapReason } from '../../src/timeline';
import { syntheticTimelines } from '../../bench/lib/synthetic-timelines';
import { randomTimelines } from './random-timelines';
import { snapshot } from './helpers';

const MODES: MergeOptions[] = [
  { compareBy: 'text', ignoreTools: true, snapDetection: true },
  { compareBy: 'text', ignoreTools: false, snapDetection: true },
  { compareBy: 'token', ignoreTools: true, snapDetection: true },
  { compareBy: 'token', ignoreTools: false, snapDetection: true },
];

/** Exact equality, reported with the batch that broke it (JSON first: toEqual on every batch is slow). */
function expectSame(trie: MergeResult, pairwise: MergeResult, label: string): void {
  if (JSON.stringify(trie) === JSON.stringify(pairwise)) return;
  expect({ label, ...trie }).toEqual({ label, ...pairwise });
}

describe('trie merge versus the pairwise reference', () => {
  it.each(MODES)('gives identical results on random batches (%o)', (options) => {
    const batches = 150;
    let timelines = 0;
    let absorbed = 0;
    let authorCopies = 0;
    let largestInto = 0;
    const reasons = new Set<SnapReason>();
    for (let b = 0; b < batches; b++) {
      const rng = mulberry32(1000 * (MODES.indexOf(options) + 1) + b);
      const input = randomTimelines(rng, 1 + Math.floor(rng() * 40));
      const before = snapshot(input);
      const trie = mergeTimelines(input, options);
      const pairwise = mergeTimelinesPairwise(input, options);
      expectSame(trie, pairwise, `batch ${b}`);
      expect(input).toEqual(before);

      // Invariants that hold whatever the reference says.
      const ids = [...trie.timelines.map((t) => t.id), ...trie.absorbed.map((a) => a.id)].sort();
      expect(ids).toEqual(input.map((t) => t.id).sort());
      for (const a of trie.absorbed) expect(a.into.length).toBeGreaterThan(0);

      timelines += input.length;
      absorbed += trie.absorbed.length;
      largestInto = Math.max(largestInto, ...trie.absorbed.map((a) => a.into.length));
      for (const t of trie.timelines) {
        const original = input.find((x) => x.id === t.id)!;
        authorCopies += t.messages.filter((m, k) => m.author !== original.messages[k]!.author).length;
      }
      for (const s of trie.snaps) reasons.add(s.reason);
    }
    // The batches really exercise the rule: thousands of timelines, merges, branches, author copies.
    expect(timelines).toBeGreaterThan(2500);
    expect(absorbed).toBeGreaterThan(timelines / 4);
    expect(largestInto).toBeGreaterThan(2);
    expect(authorCopies).toBeGreaterThan(100);
    const expected: SnapReason[] = ['text', 'author'];
    if (options.compareBy === 'token') expected.push('tokens');
    if (!options.ignoreTools) expected.push('tools');
    expect([...reasons].sort()).toEqual(expected.sort());
  });

  it('gives identical results on a synthetic Plan/Act batch, where drift and tools changes cost merges', () => {
    const input = syntheticTimelines({ timelines: 600, seed: 7 });
    const survivors = MODES.map((options) => {
      const trie = mergeTimelines(input, options);
      expectSame(trie, mergeTimelinesPairwise(input, options), `synthetic ${JSON.stringify(options)}`);
      return trie.timelines.length;
    });
    const [text, textStrictTools, token, tokenStrictTools] = survivors as [number, number, number, number];
    expect(text).toBeLessThan(input.length / 2);
    expect(token).toBeGreaterThan(text);
    expect(textStrictTools).toBeGreaterThan(text);
    expect(tokenStrictTools).toBeGreaterThan(token);
  });
});
