import { groupsWithSpread, nextDynamicSample } from '../../src/rl/dynamic-sampling';

const rows = (spec: Record<string, number[]>) => Object.entries(spec).flatMap(([groupId, rs]) => rs.map((reward) => ({ groupId, reward })));

test('keeps the groups whose rewards differ, in order; flat groups and ungrouped rows are dropped', () => {
  expect(groupsWithSpread([...rows({ a: [1, 1, 1], b: [0, 1, 0], c: [0, 0], d: [0.5, 0.25] }), { reward: 1 }, { reward: 0 }])).toEqual(['b', 'd']);
  expect(groupsWithSpread([])).toEqual([]);
});

test('rolls out more batches until enough groups with spread, or the batch limit', () => {
  const first = nextDynamicSample([], rows({ a: [1, 1], b: [0, 1] }), { wanted: 3, batchesRun: 1, maxBatches: 3 });
  expect(first).toEqual({ kept: ['b'], more: true });
  const second = nextDynamicSample(first.kept, rows({ c: [0, 1], d: [0, 0], e: [1, 0] }), { wanted: 3, batchesRun: 2, maxBatches: 3 });
  expect(second).toEqual({ kept: ['b', 'c', 'e'], more: false });
  // More than wanted: truncated to the first ones.
  expect(nextDynamicSample(['b'], rows({ c: [0, 1], e: [1, 0] }), { wanted: 2, batchesRun: 2, maxBatches: 3 }).kept).toEqual(['b', 'c']);
  // The limit stops it short.
  expect(nextDynamicSample([], rows({ a: [0, 0] }), { wanted: 2, batchesRun: 3, maxBatches: 3 })).toEqual({ kept: [], more: false });
});
