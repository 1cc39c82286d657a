/**
 * The run names are the one source of where a run's blobs live: the weights a job resolves from an
 * earlier run (resolveRunWeights) are listed and read back through them, and the names stay the
 * strings earlier releases stored.
 */
import { checkpointSteps, names, versionOfWeightsName } from '../../src/store/run-names';
import type { BlobStore } from '../../src/store/blob-store';

test('weight names keep the strings earlier releases stored', () => {
  expect(names.weights('job/a b', 12)).toBe('runs/job_a_b/weights/v000012');
  expect(names.latestWeights('job/a b')).toBe('runs/job_a_b/weights/latest');
  expect(names.weightsFolder('job/a b')).toBe('runs/job_a_b/weights/');
});

test('the version prefix lists every published version and not the latest', () => {
  const run = 'r';
  const stored = [names.weights(run, 0), names.weights(run, 7), names.latestWeights(run)];
  const listed = stored.filter((n) => n.startsWith(names.weightsVersionPrefix(run)));
  expect(listed.map(versionOfWeightsName)).toEqual([0, 7]);
});

test('checkpointSteps reads the steps off checkpoint names', async () => {
  const store = { listNames: async (prefix: string) => [names.checkpoint('r', 3), names.checkpoint('r', 10)].filter((n) => n.startsWith(prefix)) } as unknown as BlobStore;
  expect(await checkpointSteps(store, 'r')).toEqual([3, 10]);
});
