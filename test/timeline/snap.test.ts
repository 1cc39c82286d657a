import { classifySnap, mergeTimelines, mergeTimelinesPairwise, type MergeOptions } from '../../src/timeline';
import { env, llm, tl } from './helpers';

const SNAP: MergeOptions = { compareBy: 'text', ignoreTools: true, snapDetection: true };

describe.each([
  ['trie', mergeTimelines],
  ['pairwise', mergeTimelinesPairwise],
] as const)('%s snap detection', (_name, merge) => {
  it("reports 'text' where an env message was changed (a memory update, a dropped retry message)", () => {
    const t1 = tl('t1', [env('s'), env('u'), llm('a', [1])]);
    const t2 = tl('t2', [env('s'), env('u'), env('a', [1]), env('r1'), llm('b', [2])]);
    const t3 = tl('t3', [env('s'), env('u'), env('a', [1]), env('r1 (edited)'), llm('c', [3])]);
    const r = merge([t1, t2, t3], SNAP);
    expect(r.timelines.map((t) => t.id)).toEqual(['t2', 't3']);
    expect(r.snaps).toEqual([
      { timeline: 't2', other: 't3', agent: 'agent', messageIndex: 3, reason: 'text' },
      { timeline: 't3', other: 't2', agent: 'agent', messageIndex: 3, reason: 'text' },
    ]);
    expect(merge([t1, t2, t3], { ...SNAP, snapDetection: false }).snaps).toEqual([]);
  });

  it("reports 'author' where the model's reply came back altered (thinking stripped)", () => {
    const t1 = tl('t1', [env('s'), env('u'), llm('<think>hm</think>42', [7, 8, 9])]);
    const t2 = tl('t2', [env('s'), env('u'), env('42', [9]), env('thanks'), llm('bye', [10])]);
    const r = merge([t1, t2], SNAP);
    expect(r.timelines.map((t) => t.id)).toEqual(['t1', 't2']);
    expect(r.snaps).toEqual([
      { timeline: 't1', other: 't2', agent: 'agent', messageIndex: 2, reason: 'author' },
      { timeline: 't2', other: 't1', agent: 'agent', messageIndex: 2, reason: 'author' },
    ]);
  });

  it("reports 'tokens' for retokenization drift under token comparison, and nothing under text", () => {
    const t1 = tl('t1', [env('s'), llm('hello', [1, 2])]);
    const t2 = tl('t2', [env('s'), env('hello', [12]), env('r'), llm('b', [3])]);
    expect(merge([t1, t2], { ...SNAP, compareBy: 'token' }).snaps).toEqual([
      { timeline: 't1', other: 't2', agent: 'agent', messageIndex: 1, reason: 'tokens' },
      { timeline: 't2', other: 't1', agent: 'agent', messageIndex: 1, reason: 'tokens' },
    ]);
    const byText = merge([t1, t2], SNAP);
    expect(byText.timelines.map((t) => t.id)).toEqual(['t2']);
    expect(byText.snaps).toEqual([]);
  });

  it("reports 'tools' when only the tools lists keep timelines apart", () => {
    const t1 = tl('t1', [env('s'), llm('a', [1])], { tools: 'A' });
    const t2 = tl('t2', [env('s'), env('a', [1]), env('r'), llm('b', [2])], { tools: 'B' });
    const t3 = tl('t3', [env('s'), llm('a', [1])], { tools: 'B' });
    const r = merge([t1, t2, t3], { ...SNAP, ignoreTools: false });
    expect(r.timelines.map((t) => t.id)).toEqual(['t1', 't2']);
    expect(r.snaps).toEqual([
      { timeline: 't1', other: 't2', agent: 'agent', messageIndex: 2, reason: 'tools' },
      { timeline: 't2', other: 't1', agent: 'agent', messageIndex: 2, reason: 'tools' },
    ]);
    // Identical messages, different tools: parted before message 0 is even compared to differ.
    const t4 = tl('t4', [env('s'), llm('a', [1])], { tools: 'C' });
    expect(merge([t1, t4], { ...SNAP, ignoreTools: false }).snaps.map((s) => [s.messageIndex, s.reason])).toEqual([
      [2, 'tools'],
      [2, 'tools'],
    ]);
  });

  it('pairs each survivor with the one sharing the longest prefix (ties: lowest index), within its agent', () => {
    const t1 = tl('t1', [env('s'), env('x'), llm('a', [1])]);
    const t2 = tl('t2', [env('s'), env('y'), env('z'), llm('b', [2])]);
    const t3 = tl('t3', [env('s'), env('y'), env('z'), llm('c', [3])]);
    const t4 = tl('t4', [env('s'), env('y'), llm('d', [4])], { agent: 'other' });
    const t5 = tl('t5', [env('s'), env('w'), llm('e', [5])]);
    const r = merge([t1, t2, t3, t4, t5], SNAP);
    expect(r.timelines.map((t) => t.id)).toEqual(['t1', 't2', 't3', 't4', 't5']);
    expect(r.snaps).toEqual([
      { timeline: 't1', other: 't2', agent: 'agent', messageIndex: 1, reason: 'text' },
      // Two samples from the same context: both llm, so 'text', not 'author'.
      { timeline: 't2', other: 't3', agent: 'agent', messageIndex: 3, reason: 'text' },
      { timeline: 't3', other: 't2', agent: 'agent', messageIndex: 3, reason: 'text' },
      { timeline: 't5', other: 't1', agent: 'agent', messageIndex: 1, reason: 'text' },
    ]);
  });
});

describe('classifySnap', () => {
  it("calls a timeline that simply ends first 'length' (between survivors only tools can do that)", () => {
    const a = tl('a', [env('s'), llm('x', [1])]);
    const b = tl('b', [env('s'), llm('x', [1]), env('r')], { tools: 'T' });
    expect(classifySnap(a, b, 2, { ignoreTools: true })).toBe('length');
    expect(classifySnap(a, b, 2, { ignoreTools: false })).toBe('tools');
    expect(classifySnap(b, a, 2, { ignoreTools: false })).toBe('tools');
  });

  it("prefers 'tokens' to 'author' when the texts are equal (drift of a fed-back reply)", () => {
    const a = tl('a', [env('s'), llm('hello', [1, 2])]);
    const b = tl('b', [env('s'), env('hello', [12])]);
    expect(classifySnap(a, b, 1, { ignoreTools: true })).toBe('tokens');
    const c = tl('c', [env('s'), llm('bye', [3])]);
    expect(classifySnap(a, c, 1, { ignoreTools: true })).toBe('text');
    expect(classifySnap(b, c, 1, { ignoreTools: true })).toBe('author');
  });
});
