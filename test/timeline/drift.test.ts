import { fixRetokenizationDrift, mergeTimelines, TimelineError, type MergeOptions } from '../../src/timeline';
import { env, llm, snapshot, tl } from './helpers';

const TOKEN: MergeOptions = { compareBy: 'token', ignoreTools: true, snapDetection: false };

describe('fixRetokenizationDrift', () => {
  // The engine sampled "hel"+"lo" = [1, 2]; the next request re-encoded the text as [12].
  const t1 = tl('t1', [env('sys'), env('u'), llm('hello', [1, 2], [-0.5, -0.75])]);
  const t2 = tl('t2', [env('sys'), env('u'), env('hello', [12]), env('r'), llm('bye', [3], [-0.1])]);

  it("puts the engine's ids back on the env copy of a reply, and then token comparison merges", () => {
    const before = snapshot([t1, t2]);
    expect(mergeTimelines([t1, t2], TOKEN).timelines.map((t) => t.id)).toEqual(['t1', 't2']);

    const fixed = fixRetokenizationDrift([t1, t2]);
    expect(fixed.repaired).toBe(1);
    expect(fixed.timelines[0]).toBe(t1);
    expect(fixed.timelines[1]!.messages[2]).toEqual({ author: 'env', text: 'hello', tokenIds: [1, 2], logprobs: [0, 0] });
    expect(fixed.timelines[1]!.messages.filter((_, k) => k !== 2)).toEqual(t2.messages.filter((_, k) => k !== 2));
    expect([t1, t2]).toEqual(before);

    const merged = mergeTimelines(fixed.timelines, TOKEN);
    expect(merged.timelines.map((t) => t.id)).toEqual(['t2']);
    expect(merged.absorbed).toEqual([{ id: 't1', into: ['t2'] }]);
    expect(merged.timelines[0]!.messages[2]).toEqual({ author: 'llm', text: 'hello', tokenIds: [1, 2], logprobs: [-0.5, -0.75] });
  });

  it('repairs only from earlier outputs of the same agent', () => {
    expect(fixRetokenizationDrift([t2, t1]).repaired).toBe(0);
    expect(fixRetokenizationDrift([t1, { ...t2, agent: 'other' }]).repaired).toBe(0);
  });

  it('uses the most recent earlier output with that text', () => {
    const t0 = tl('t0', [env('sys'), llm('hello', [5, 6], [-1, -1])]);
    const fixed = fixRetokenizationDrift([t1, t0, t2]);
    expect(fixed.repaired).toBe(1);
    expect(fixed.timelines[2]!.messages[2]!.tokenIds).toEqual([5, 6]);
  });

  it('leaves llm inputs, outputs and messages whose ids already match alone', () => {
    const llmInput = tl('a', [env('sys'), llm('hello', [12]), env('r'), llm('x', [4])]);
    const envOutput = tl('b', [env('sys'), env('hello', [12])]);
    const matching = tl('c', [env('sys'), env('hello', [1, 2]), llm('y', [5])]);
    const fixed = fixRetokenizationDrift([t1, llmInput, envOutput, matching]);
    expect(fixed.repaired).toBe(0);
    fixed.timelines.forEach((t, i) => expect(t).toBe([t1, llmInput, envOutput, matching][i]));
  });

  it('counts every repaired message', () => {
    const t3 = tl('t3', [env('sys'), env('u'), env('hello', [12]), env('r'), env('bye', [30]), env('more'), llm('end', [9])]);
    const fixed = fixRetokenizationDrift([t1, t2, t3]);
    expect(fixed.repaired).toBe(3);
    expect(fixed.timelines[2]!.messages.map((m) => m.tokenIds)).toEqual([[115, 121, 115], [117], [1, 2], [114], [3], [109, 111, 114, 101], [9]]);
    expect(mergeTimelines(fixed.timelines, TOKEN).timelines.map((t) => t.id)).toEqual(['t3']);
  });

  it('validates its input', () => {
    expect(() => fixRetokenizationDrift([t1, t1])).toThrow(TimelineError);
  });
});
