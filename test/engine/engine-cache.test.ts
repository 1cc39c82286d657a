/**
 * The inference worker's engine cache: past four weight versions the oldest engine nobody holds is
 * released; an evaluation holds its engines (lease). Six joint evaluations at once once met "Session already
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

test('engines leased all at once are all kept; the extra ones go at the next load once their leases end', async () => {
  const { cache, released } = fakeCache();
  let finish!: () => void;
  const held = new Promise<void>((r) => (finish = r));
  const evaluations = [1, 2, 3, 4, 5].map((n) => cache.lease(weights(n), async () => held));
  await settle();
  expect(released).toEqual([]);
  finish();
  await Promise.all(evaluations);
  await cache.get(weights(6));
  await settle();
  expect(released).toEqual([1, 2]);
});

test('eviction passes over leased engines, so a second request for leased weights finds the same engine', async () => {
  const { cache, released } = fakeCache();
  let finish!: () => void;
  const held = new Promise<void>((r) => (finish = r));
  let leased: unknown;
  const evaluation = cache.lease(weights(1), async (e) => {
    leased = e;
    return held;
  });
  for (const n of [2, 3, 4, 5]) await cache.get(weights(n));
  await settle();
  // Version 2 (the oldest nobody holds) went instead of version 1.
  expect(released).toEqual([2]);
  expect(await cache.get(weights(1))).toBe(leased);
  finish();
  await evaluation;
});

test('an engine nobody leases is released when evicted, and a later request loads it again', async () => {
  const { cache, released } = fakeCache();
  const first = await cache.get(weights(1));
  for (const n of [2, 3, 4, 5]) await cache.get(weights(n));
  await settle();
  expect(released).toEqual([1]);
  expect(await cache.get(weights(1))).not.toBe(first);
});
