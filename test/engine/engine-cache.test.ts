/**
 * The inference worker's engine cache: past four weight versions the oldest engine is released, but
 * not while an evaluation holds it (lease). Six joint evaluations at once once met "Session already
 * disposed": an evaluation's engine was released between two of its requests, its queue being empty.
 */
import { EngineCache } from '../../activities/engine-cache';
import type { BatchingEngine } from '../../src/engine/batcher';
import type { WeightsInfo } from '../../src/contracts/weights';
import type { BlobStore } from '../../src/store/blob-store';

const weights = (n: number): WeightsInfo => ({ version: n, step: 0, onnx: { sha256: n.toString(16).padStart(64, '0'), bytes: 1, kind: 'onnx' } });

function fakeCache() {
  const released: number[] = [];
  const cache = new EngineCache({} as BlobStore, 1, async (w) => ({ release: async () => void released.push(w.version) }) as unknown as BatchingEngine);
  return { cache, released };
}

const settle = () => new Promise((r) => setImmediate(r));

test('an engine evicted while leased is released when its last lease ends, not before', async () => {
  const { cache, released } = fakeCache();
  let finish!: () => void;
  const held = new Promise<void>((r) => (finish = r));
  const evaluation = cache.lease(weights(1), async () => held);
  for (const n of [2, 3, 4, 5]) await cache.get(weights(n));
  await settle();
  expect(released).toEqual([]);
  finish();
  await evaluation;
  await settle();
  expect(released).toEqual([1]);
});

test('an engine nobody leases is released when evicted, and a later request loads it again', async () => {
  const { cache, released } = fakeCache();
  const first = await cache.get(weights(1));
  for (const n of [2, 3, 4, 5]) await cache.get(weights(n));
  await settle();
  expect(released).toEqual([1]);
  expect(await cache.get(weights(1))).not.toBe(first);
});
