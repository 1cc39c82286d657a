import { mergeTimelines, mergeTimelinesPairwise, TimelineError, type MergeOptions, type MergeResult, type Timeline } from '../../src/timeline';
import { env, llm, snapshot, tl } from './helpers';

const TEXT: MergeOptions = { compareBy: 'text', ignoreTools: true, snapDetection: false };
const TOKEN: MergeOptions = { ...TEXT, compareBy: 'token' };

const survivorIds = (r: MergeResult) => r.timelines.map((t) => t.id);
const authors = (t: Timeline) => t.messages.map((m) => m.author);

// Every expectation holds for the trie merge and for its pairwise reference.
describe.each([
  ['trie', mergeTimelines],
  ['pairwise', mergeTimelinesPairwise],
] as const)('%s merge', (_name, merge) => {
  it('absorbs each request of a multi-turn chain into the last one and marks every reply as llm', () => {
    const t1 = tl('t1', [env('sys'), env('u1'), llm('a1', [1, 2], [-0.5, -0.25])]);
    const t2 = tl('t2', [env('sys'), env('u1'), env('a1', [3]), env('r1'), llm('a2', [4], [-1])]);
    const t3 = tl('t3', [env('sys'), env('u1'), env('a1', [3]), env('r1'), env('a2', [4]), env('r2'), llm('a3', [5, 6], [-0.125, -2])]);
    const r = merge([t1, t2, t3], TEXT);
    expect(survivorIds(r)).toEqual(['t3']);
    expect(r.absorbed).toEqual([
      { id: 't1', into: ['t3'] },
      { id: 't2', into: ['t3'] },
    ]);
    expect(r.timelines[0]!.messages).toEqual([
      env('sys'),
      env('u1'),
      { author: 'llm', text: 'a1', tokenIds: [1, 2], logprobs: [-0.5, -0.25] },
      env('r1'),
      { author: 'llm', text: 'a2', tokenIds: [4], logprobs: [-1] },
      env('r2'),
      { author: 'llm', text: 'a3', tokenIds: [5, 6], logprobs: [-0.125, -2] },
    ]);
    expect(r.snaps).toEqual([]);
    expect(r.stats).toEqual({ timelinesIn: 3, timelinesOut: 1, tokensIn: 7 + 9 + 13, tokensOut: 14, messagesIn: 15, messagesOut: 7 });
  });

  it('takes the newest llm source (highest input index), however deep it is: the rule drift repair uses too', () => {
    // t0 and t1 both wrote message 1; t1 was captured later, so its ids and logprobs win. Message 3
    // has one source, t0, deeper in the trie than t1.
    const t0 = tl('t0', [env('s'), llm('a', [10], [-0.1]), env('b'), llm('c', [30], [-0.3])]);
    const t1 = tl('t1', [env('s'), llm('a', [11], [-0.9])]);
    const t2 = tl('t2', [env('s'), env('a', [12]), env('b'), env('c', [32]), llm('d', [40], [-0.4])]);
    const r = merge([t0, t1, t2], TEXT);
    expect(survivorIds(r)).toEqual(['t2']);
    expect(r.absorbed).toEqual([
      { id: 't0', into: ['t2'] },
      { id: 't1', into: ['t2'] },
    ]);
    const m = r.timelines[0]!.messages;
    expect(authors(r.timelines[0]!)).toEqual(['env', 'llm', 'env', 'llm', 'llm']);
    expect(m[1]).toEqual({ author: 'llm', text: 'a', tokenIds: [11], logprobs: [-0.9] });
    expect(m[3]).toEqual({ author: 'llm', text: 'c', tokenIds: [30], logprobs: [-0.3] });
    // The same inputs in the other capture order: the newer source is again the one kept.
    const swapped = merge([t1, t0, t2], TEXT);
    expect(swapped.timelines[0]!.messages[1]).toEqual({ author: 'llm', text: 'a', tokenIds: [10], logprobs: [-0.1] });
  });

  it("never overwrites a survivor's own llm message", () => {
    const t1 = tl('t1', [env('s'), llm('a', [1], [-0.1])]);
    const t2 = tl('t2', [env('s'), llm('a', [2], [-0.2]), env('r'), llm('b', [3], [-0.3])]);
    const r = merge([t1, t2], TEXT);
    expect(r.timelines[0]!.messages[1]).toEqual({ author: 'llm', text: 'a', tokenIds: [2], logprobs: [-0.2] });
  });

  it('compares by text: retokenized text still merges and the survivor gets the engine ids', () => {
    const t1 = tl('t1', [env('sys'), llm('hello', [7, 8], [-0.3, -0.6])]);
    const t2 = tl('t2', [env('sys'), env('hello', [78]), env('ok'), llm('bye', [9], [-1])]);
    const r = merge([t1, t2], TEXT);
    expect(survivorIds(r)).toEqual(['t2']);
    expect(r.timelines[0]!.messages[1]).toEqual({ author: 'llm', text: 'hello', tokenIds: [7, 8], logprobs: [-0.3, -0.6] });
    expect(r.stats.tokensOut).toBe(3 + 2 + 2 + 1);
  });

  it('compares by token: retokenized text does not merge, equal ids merge whatever the text', () => {
    const t1 = tl('t1', [env('sys'), llm('hello', [7, 8], [-0.3, -0.6])]);
    const t2 = tl('t2', [env('sys'), env('hello', [78]), env('ok'), llm('bye', [9], [-1])]);
    const r = merge([t1, t2], TOKEN);
    expect(survivorIds(r)).toEqual(['t1', 't2']);
    expect(r.absorbed).toEqual([]);
    expect(r.timelines).toEqual([t1, t2]);

    // Same ids, different text (e.g. a template that renders a space differently): merged, and
    // the survivor keeps its own text while taking the llm author and logprobs.
    const t3 = tl('t3', [env('sys'), env('hello ', [7, 8]), env('ok'), llm('bye', [9], [-1])]);
    const r2 = merge([t1, t3], TOKEN);
    expect(survivorIds(r2)).toEqual(['t3']);
    expect(r2.timelines[0]!.messages[1]).toEqual({ author: 'llm', text: 'hello ', tokenIds: [7, 8], logprobs: [-0.3, -0.6] });
    expect(survivorIds(merge([t1, t3], TEXT))).toEqual(['t1', 't3']);
  });

  it('treats [1, 23] and [12, 3] as different token sequences', () => {
    const t1 = tl('t1', [env('x', [1, 23]), llm('y', [5])]);
    const t2 = tl('t2', [env('x', [12, 3]), llm('y', [5]), env('z'), llm('w', [6])]);
    expect(survivorIds(merge([t1, t2], TOKEN))).toEqual(['t1', 't2']);
  });

  it('merges across tools lists only when told to ignore them', () => {
    const t1 = tl('t1', [env('sys'), llm('call', [1], [-0.5])], { tools: '[calc]' });
    const t2 = tl('t2', [env('sys'), env('call', [1]), env('result'), llm('done', [2], [-0.1])], { tools: '[calc,search]' });
    const ignoring = merge([t1, t2], { ...TEXT, ignoreTools: true });
    expect(survivorIds(ignoring)).toEqual(['t2']);
    expect(ignoring.timelines[0]!.tools).toBe('[calc,search]');
    expect(ignoring.timelines[0]!.messages[1]!.author).toBe('llm');
    const strict = merge([t1, t2], { ...TEXT, ignoreTools: false });
    expect(survivorIds(strict)).toEqual(['t1', 't2']);
    expect(strict.timelines[1]!.messages[1]!.author).toBe('env');
    // Same tools list: merged under both settings.
    const t3 = { ...t2, id: 't3', tools: '[calc]' };
    expect(survivorIds(merge([t1, t3], { ...TEXT, ignoreTools: false }))).toEqual(['t3']);
  });

  it('keeps the highest index of identical timelines, which takes the llm authors of the others', () => {
    const a = tl('a', [env('s'), llm('x', [1], [-0.1])]);
    const b = tl('b', [env('s'), env('x', [1])]);
    const c = tl('c', [env('s'), env('x', [1])]);
    const r = merge([a, b, c], TEXT);
    expect(survivorIds(r)).toEqual(['c']);
    expect(r.absorbed).toEqual([
      { id: 'a', into: ['c'] },
      { id: 'b', into: ['c'] },
    ]);
    expect(r.timelines[0]!.messages[1]).toEqual({ author: 'llm', text: 'x', tokenIds: [1], logprobs: [-0.1] });
    // A longer timeline extending them absorbs all three, the highest identical one included.
    const d = tl('d', [env('s'), env('x', [1]), env('y'), llm('z', [2], [-0.2])]);
    const r2 = merge([a, d, b, c], TEXT);
    expect(survivorIds(r2)).toEqual(['d']);
    expect(r2.absorbed.map((x) => x.id)).toEqual(['a', 'b', 'c']);
    expect(authors(r2.timelines[0]!)).toEqual(['env', 'llm', 'env', 'llm']);
  });

  it('absorbs a shared prefix into every branch, listing them in input order', () => {
    const b2 = tl('b2', [env('s'), env('u'), env('a', [1]), env('r2'), llm('c', [3], [-0.3])]);
    const root = tl('root', [env('s'), env('u'), llm('a', [1], [-0.1])]);
    const b1 = tl('b1', [env('s'), env('u'), env('a', [1]), env('r1'), llm('b', [2], [-0.2])]);
    const r = merge([b2, root, b1], TEXT);
    expect(survivorIds(r)).toEqual(['b2', 'b1']);
    expect(r.absorbed).toEqual([{ id: 'root', into: ['b2', 'b1'] }]);
    for (const t of r.timelines) expect(t.messages[2]).toEqual({ author: 'llm', text: 'a', tokenIds: [1], logprobs: [-0.1] });
  });

  it('never merges different agents', () => {
    const p = tl('p', [env('s'), llm('a', [1], [-0.1])], { agent: 'planner' });
    const q = tl('q', [env('s'), env('a', [1]), env('r'), llm('b', [2], [-0.2])], { agent: 'actor' });
    const q2 = tl('q2', [env('s'), llm('a', [1], [-0.1])], { agent: 'actor' });
    const r = merge([p, q, q2], TEXT);
    expect(survivorIds(r)).toEqual(['p', 'q']);
    expect(r.absorbed).toEqual([{ id: 'q2', into: ['q'] }]);
    expect(r.timelines[0]).toEqual(p);
  });

  it('returns fresh copies and leaves its input as it was', () => {
    const input = [tl('t1', [env('s'), llm('a', [1], [-0.1])]), tl('t2', [env('s'), env('a', [1]), env('r'), llm('b', [2], [-0.2])])];
    const before = snapshot(input);
    const r = merge(input, TEXT);
    expect(input).toEqual(before);
    r.timelines[0]!.messages[3]!.tokenIds.push(99);
    r.timelines[0]!.messages[1]!.logprobs[0] = 5;
    expect(input).toEqual(before);
    const lone = merge([input[0]!], TEXT);
    expect(lone.timelines[0]).toEqual(input[0]);
    expect(lone.timelines[0]).not.toBe(input[0]);
    expect(lone.timelines[0]!.messages[1]!.tokenIds).not.toBe(input[0]!.messages[1]!.tokenIds);
  });

  it('merges nothing out of nothing', () => {
    expect(merge([], TEXT)).toEqual({
      timelines: [],
      absorbed: [],
      snaps: [],
      stats: { timelinesIn: 0, timelinesOut: 0, tokensIn: 0, tokensOut: 0, messagesIn: 0, messagesOut: 0 },
    });
  });

  function errorOf(input: unknown): TimelineError {
    try {
      merge(input as Timeline[], TEXT);
    } catch (err) {
      if (err instanceof TimelineError) return err;
      throw err;
    }
    throw new Error('no error');
  }

  it('rejects malformed timelines with the timeline and field at fault', () => {
    const ok = tl('ok', [env('s'), llm('a')]);
    expect(errorOf([ok, { ...ok }])).toMatchObject({ timelineId: 'ok', field: 'id' });
    expect(errorOf([{ ...ok, id: '' }])).toMatchObject({ field: 'id' });
    expect(errorOf([tl('e', [])])).toMatchObject({ timelineId: 'e', field: 'messages' });
    const short = tl('short', [env('s'), { author: 'llm', text: 'ab', tokenIds: [1, 2], logprobs: [-1] }]);
    const err = errorOf([ok, short]);
    expect(err).toMatchObject({ timelineId: 'short', field: 'messages[1].logprobs' });
    expect(err.message).toBe('timeline "short": messages[1].logprobs: has 1 entries for 2 token ids');
    expect(errorOf([tl('x', [{ ...env('s'), author: 'user' as 'env' }])])).toMatchObject({ timelineId: 'x', field: 'messages[0].author' });
    expect(errorOf([tl('y', [{ author: 'env', text: 's', tokenIds: [1, -2], logprobs: [0, 0] }])])).toMatchObject({ field: 'messages[0].tokenIds[1]' });
    expect(errorOf([tl('z', [{ author: 'env', text: 's', tokenIds: [1.5], logprobs: [0] }])])).toMatchObject({ field: 'messages[0].tokenIds[0]' });
    expect(errorOf([tl('w', [{ author: 'llm', text: 's', tokenIds: [1], logprobs: [Number.NaN] }])])).toMatchObject({ field: 'messages[0].logprobs[0]' });
    expect(errorOf([{ ...ok, agent: undefined }])).toMatchObject({ field: 'agent' });
    expect(errorOf([{ ...ok, tools: null }])).toMatchObject({ field: 'tools' });
  });
});


describe('trie merge at scale', () => {
  it('merges a 300-request chain into its last request with every reply marked llm', () => {
    const requests: Timeline[] = [];
    const context = [env('sys', [1])];
    for (let r = 0; r < 300; r++) {
      requests.push(tl(`r${r}`, [...context, llm(`reply ${r}`, [1000 + r], [-r / 1000])]));
      context.push(env(`reply ${r}`, [1000 + r]), env(`tool ${r}`, [5000 + r]));
    }
    const result = mergeTimelines(requests, TEXT);
    expect(survivorIds(result)).toEqual(['r299']);
    expect(result.absorbed).toEqual(requests.slice(0, 299).map((t) => ({ id: t.id, into: ['r299'] })));
    const merged = result.timelines[0]!.messages;
    expect(merged).toHaveLength(1 + 2 * 299 + 1);
    for (let r = 0; r < 300; r++) expect(merged[1 + 2 * r]).toEqual({ author: 'llm', text: `reply ${r}`, tokenIds: [1000 + r], logprobs: [-r / 1000] });
    expect(merged.filter((m) => m.author === 'llm')).toHaveLength(300);
  });

  it('walks a trie as deep as a 200,000-message timeline without recursion', () => {
    const long = Array.from({ length: 200_000 }, (_, k) => env(`m${k}`, [k]));
    const prefix = long.slice(0, 100_000);
    prefix[99_999] = llm('m99999', [99_999], [-0.5]);
    const r = mergeTimelines([tl('prefix', prefix), tl('long', long)], TEXT);
    expect(survivorIds(r)).toEqual(['long']);
    expect(r.timelines[0]!.messages[99_999]).toEqual({ author: 'llm', text: 'm99999', tokenIds: [99_999], logprobs: [-0.5] });
    expect(r.timelines[0]!.messages.filter((m) => m.author === 'llm')).toHaveLength(1);
  });
});
