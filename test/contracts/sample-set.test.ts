/**
 * The sample-set format (src/contracts/sample-set.ts): the blob's field names are what stored runs,
 * the torch worker (`get_json(...)["samples"]`) and the viewer read, so they are pinned here.
 */
import { readSampleFile, readSamples, SampleFileError, writeSampleSet } from '../../src/contracts/sample-set';
import type { Sample } from '../../src/domain/types';
import { getJson, putJson } from '../../src/store/blob-store';
import type { SnapReport } from '../../src/timeline/types';
import { asViewerError } from '../../src/viewer/errors';
import { tempStore } from '../helpers/store';

const store = tempStore('sample-set');
const sample = (reward: number): Sample => ({
  promptTokens: [1],
  responseTokens: [2, 3],
  logprobs: [-0.1, -0.2],
  lossMask: [1, 1],
  reward,
  metadata: { role: 'single', episodeId: 'e', turn: 1, weightVersion: 0 },
});

describe('the sample-set format', () => {
  it('writes { samples, snaps } and a reference that counts them; reads back the same', async () => {
    const snaps: SnapReport[] = [{ timeline: 'a', other: 'b', agent: 'single', messageIndex: 1, reason: 'length' }];
    const counts = { captured: 2, merged: 1, tokensBefore: 6, tokensAfter: 3, driftRepaired: 0 };
    const set = await writeSampleSet(store, 'single', [sample(1), sample(0)], { counts, snaps });
    expect(set).toMatchObject({ role: 'single', samples: 2, responseTokens: 4, meanReward: 0.5, timelines: counts });
    expect(Object.keys(await getJson<object>(store, set.ref))).toEqual(['samples', 'snaps']);
    expect(await readSampleFile(store, set.ref)).toEqual({ samples: [sample(1), sample(0)], snaps });
  });

  it('leaves snaps and counts out when the samples were not merged', async () => {
    const set = await writeSampleSet(store, 'planner', [sample(1)]);
    expect(set.timelines).toBeUndefined();
    expect(Object.keys(await getJson<object>(store, set.ref))).toEqual(['samples']);
    expect(await readSamples(store, set.ref)).toEqual([sample(1)]);
  });

  it('refuses a blob that is not a sample file with a SampleFileError, which the viewer reports as unreadable', async () => {
    const ref = await putJson(store, { examples: [] }, 'not-samples');
    const err = await readSampleFile(store, ref).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SampleFileError);
    expect((err as Error).message).toBe(`blob ${ref.sha256}: not a sample file (no samples array)`);
    expect(asViewerError(err, 'sample set 1')).toMatchObject({ status: 502, code: 'blob-unreadable' });
  });
});
