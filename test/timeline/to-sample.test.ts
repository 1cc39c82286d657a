import type { SampleMetadata } from '../../src/domain/types';
import { mergeTimelines, timelineStats, timelineToSample } from '../../src/timeline';
import { env, llm, tl } from './helpers';

const META: SampleMetadata = { role: 'actor', episodeId: 'ep-1', turn: 2, actId: '1', weightVersion: 3 };

describe('timelineToSample', () => {
  it('trains on the llm tokens only, with the engine logprobs, from the first llm message on', () => {
    const t = tl('t', [
      env('sys', [1, 2]),
      env('u', [3]),
      llm('a', [4, 5], [-0.5, -0.25]),
      env('r', [6]),
      llm('b', [7], [-2]),
    ]);
    expect(timelineToSample(t, { reward: 1, metadata: META })).toEqual({
      promptTokens: [1, 2, 3],
      responseTokens: [4, 5, 6, 7],
      logprobs: [-0.5, -0.25, 0, -2],
      lossMask: [1, 1, 0, 1],
      reward: 1,
      metadata: META,
    });
  });

  it('gives no sample for a timeline the model wrote nothing in', () => {
    expect(timelineToSample(tl('t', [env('sys'), env('u')]), { reward: 0, metadata: META })).toBeNull();
  });

  it('turns a merged chain into one sample covering every reply', () => {
    const t1 = tl('t1', [env('s', [1]), llm('a', [2], [-0.1])]);
    const t2 = tl('t2', [env('s', [1]), env('a', [20]), env('r', [3]), llm('b', [4], [-0.4])]);
    const [merged] = mergeTimelines([t1, t2]).timelines;
    expect(timelineToSample(merged!, { reward: 0.5, metadata: META })).toMatchObject({
      promptTokens: [1],
      responseTokens: [2, 3, 4],
      logprobs: [-0.1, 0, -0.4],
      lossMask: [1, 0, 1],
    });
    expect(timelineStats(merged!)).toEqual({ messages: 4, tokens: 4, llmTokens: 2, llmMessages: 2 });
  });
});
