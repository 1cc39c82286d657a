/**
 * The episode pipeline in src/timeline (capture → drift → merge → per-token values → labelled
 * samples), run without a store: what writeEpisodeSamples writes for one episode's calls.
 */
import { TimelineSchema } from '../../src/config/schema';
import type { CallTokens } from '../../src/timeline/episode-merge';
import { SamplesByRole, type EpisodeCall } from '../../src/timeline/episode-samples';
import { segmentTokenValues } from '../../src/timeline/token-values';
import type { Timeline } from '../../src/timeline/types';

const P = { text: 'Evaluate: 12+34\n', tokenIds: [1, 2, 3] };
const O1 = { text: '<calc>12+34</calc>', tokenIds: [10, 11] };
const R = { text: '<result>46</result>\n', tokenIds: [30, 31, 32] };
const O2 = { text: 'ANSWER: 46', tokenIds: [20] };

/** Two calls of one actor act: the second's prompt repeats the first's output, so they merge. */
function calls(): { generations: EpisodeCall[]; tokens: CallTokens[] } {
  const tokens = (prompt: Array<typeof P>, out: typeof P): CallTokens => ({
    promptTokenIds: prompt.flatMap((m) => m.tokenIds),
    tokenIds: out.tokenIds,
    logprobs: out.tokenIds.map(() => -0.5),
    messages: prompt,
    outputText: out.text,
  });
  return {
    generations: [
      { role: 'actor', turn: 1, actId: 'a', step: 0, weightVersion: 3 },
      { role: 'actor', turn: 1, actId: 'a', step: 1, weightVersion: 3 },
    ],
    tokens: [tokens([P], O1), tokens([P, O1, R], O2)],
  };
}

describe('an episode\'s samples (src/timeline/episode-samples.ts)', () => {
  it('merges the calls into one sample, each model token credited with its call\'s value, labelled by the last call', () => {
    const { generations, tokens } = calls();
    const byRole = new SamplesByRole<EpisodeCall>(TimelineSchema.parse({}));
    byRole.add({ episodeId: 'e1', groupId: 'g1', reward: 1, generations, segmentAdvantages: [0.5, -1] }, tokens);
    const actor = byRole.roles.get('actor')!;
    expect(actor.samples).toEqual([
      {
        promptTokens: [1, 2, 3],
        responseTokens: [10, 11, 30, 31, 32, 20],
        logprobs: [-0.5, -0.5, 0, 0, 0, -0.5],
        lossMask: [1, 1, 0, 0, 0, 1],
        tokenAdvantages: [0.5, 0.5, 0, 0, 0, -1],
        reward: 1,
        metadata: { role: 'actor', episodeId: 'e1', turn: 1, actId: 'a', weightVersion: 3, groupId: 'g1' },
      },
    ]);
    expect(actor.counts).toMatchObject({ captured: 2, merged: 1, tokensBefore: (3 + 2) + (8 + 1), tokensAfter: 9 });
  });

  it('without a timeline config every call is its own sample, all its tokens the model\'s, and no counts', () => {
    const { generations, tokens } = calls();
    const byRole = new SamplesByRole<EpisodeCall>();
    byRole.add({ episodeId: 'e1', reward: 0, generations, segmentAdvantages: [0.5, -1] }, tokens);
    const actor = byRole.roles.get('actor')!;
    expect(actor.samples.map((s) => [s.responseTokens, s.tokenAdvantages])).toEqual([
      [[10, 11], [0.5, 0.5]],
      [[20], [-1]],
    ]);
    expect(actor.counts).toBeUndefined();
  });

  it('blobs written before capture are kept one sample a call and counted as captured and kept', () => {
    const { generations, tokens } = calls();
    const uncaptured = tokens.map(({ messages: _m, outputText: _o, ...t }) => t);
    const byRole = new SamplesByRole<EpisodeCall>(TimelineSchema.parse({}));
    byRole.add({ episodeId: 'e1', reward: 0, generations }, uncaptured);
    expect(byRole.roles.get('actor')!.counts).toMatchObject({ captured: 2, merged: 2, tokensBefore: (3 + 2) + (8 + 1), tokensAfter: 14 });
  });
});

describe('segmentTokenValues', () => {
  const merged: Timeline = {
    id: '1:actor',
    agent: 'actor',
    tools: '',
    messages: [
      { author: 'env', text: 'p', tokenIds: [1], logprobs: [0] },
      { author: 'llm', text: 'a', tokenIds: [2, 3], logprobs: [0, 0] },
      { author: 'env', text: 'r', tokenIds: [4], logprobs: [0] },
      { author: 'llm', text: 'b', tokenIds: [5], logprobs: [0] },
    ],
  };

  it('gives each response token the value of the call that wrote it, env tokens 0', () => {
    expect(segmentTokenValues(merged, [7, 0.25, -2], 2)).toEqual([0.25, 0.25, 0, -2]);
  });

  it('refuses a timeline with more model messages than calls before it', () => {
    expect(() => segmentTokenValues(merged, [1], 0)).toThrow('timeline 1:actor: 2 model messages but only 1 calls before it');
  });
});
