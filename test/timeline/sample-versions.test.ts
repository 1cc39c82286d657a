/**
 * Weight versions of merged samples (partial rollouts, docs/async-rl.md): on a synced remote server
 * an asynchronous rollout's later calls may run on newer weights than its first. A sample merged
 * from calls of several versions counts as the oldest and lists them all; a remote completion is
 * labelled with the version the server served, never an older one than the rollout's.
 */
import { acceptedServedVersion } from '../../activities/inference';
import { createSampleActivities } from '../../activities/samples';
import { readSamples } from '../../src/contracts/sample-set';
import { TimelineSchema } from '../../src/config/schema';
import type { CompletionTokens, GenerationRef } from '../../src/contracts/generation';
import { loadTokenizer } from '../../src/model/tokenizer';
import { putJson } from '../../src/store/blob-store';
import { tempStore } from '../helpers/store';

const tok = loadTokenizer();
const store = tempStore('sample-versions');
const samples = createSampleActivities({ store });

/** One call: the prompt as its messages, the output text; logprobs -0.5 per output token. */
async function call(messages: string[], output: string, weightVersion: number, step: number): Promise<GenerationRef> {
  const pieces = messages.map((text) => ({ text, tokenIds: tok.encode(text) }));
  const tokenIds = tok.encode(output);
  const tokens: CompletionTokens = {
    promptTokenIds: pieces.flatMap((p) => p.tokenIds),
    tokenIds,
    logprobs: tokenIds.map(() => -0.5),
    entropy: tokenIds.map(() => 0.1),
    messages: pieces,
    outputText: output,
  };
  return { role: 'single', turn: 1, step, tokens: await putJson(store, tokens, 'completion-tokens'), weightVersion };
}

/** A calculator episode of two calls: the second's prompt repeats the first's output, so they merge. */
async function episode(versions: [number, number]): Promise<GenerationRef[]> {
  const prompt = 'Evaluate: 12+34\n';
  const first = '<calc>12+34</calc>';
  return [await call([prompt], first, versions[0], 0), await call([prompt, first, '<result>46</result>\n'], 'ANSWER: 46', versions[1], 1)];
}

describe('weight versions of samples', () => {
  it('a sample merged from calls on two versions counts as the oldest and lists both; one version lists none', async () => {
    const sets = await samples.writeEpisodeSamples({
      episodes: [
        { episodeId: 'partial', reward: 1, generations: await episode([4, 5]) },
        { episodeId: 'whole', reward: 1, generations: await episode([5, 5]) },
      ],
      timeline: TimelineSchema.parse({}),
    });
    const got = await readSamples(store, sets.single!.ref);
    expect(got).toHaveLength(2);
    const [partial, whole] = got;
    expect(partial!.metadata).toMatchObject({ episodeId: 'partial', weightVersion: 4, weightVersions: [4, 5] });
    // Both calls' tokens are trained in the one sample.
    expect(partial!.lossMask.filter((m) => m === 1).length).toBe(tok.encode('<calc>12+34</calc>').length + tok.encode('ANSWER: 46').length);
    expect(whole!.metadata.weightVersion).toBe(5);
    expect(whole!.metadata.weightVersions).toBeUndefined();
  });

  it('without merging every call is its own sample with its own version', async () => {
    const sets = await samples.writeEpisodeSamples({ episodes: [{ episodeId: 'calls', reward: 0, generations: await episode([4, 5]) }] });
    const got = await readSamples(store, sets.single!.ref);
    expect(got.map((s) => [s.metadata.weightVersion, s.metadata.weightVersions])).toEqual([
      [4, undefined],
      [5, undefined],
    ]);
  });

  it('a synced server\'s completion is labelled with the one version it served, the wanted one or newer', () => {
    expect(acceptedServedVersion('3', '3', 3)).toBe(3);
    // A newer sync landed before the request (a partial rollout goes on with it).
    expect(acceptedServedVersion('4', '4', 3)).toBe(4);
    // The server has not been given the wanted weights yet, or none at all.
    expect(acceptedServedVersion('2', '2', 3)).toBeUndefined();
    expect(acceptedServedVersion(null, null, 0)).toBeUndefined();
    // The weights changed while the request ran: no single version made its tokens.
    expect(acceptedServedVersion('3', '4', 3)).toBeUndefined();
    expect(acceptedServedVersion('abc', 'abc', 0)).toBeUndefined();
  });
});
