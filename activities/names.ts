/** Blob-store names per run (src/store/run-names.ts), and the steps a run has checkpoints at. */
import type { BlobStore } from '../src/store/blob-store';
import { names, stepOfName } from '../src/store/run-names';

export { names, runKey } from '../src/store/run-names';

/** The steps a run has checkpoints at (its checkpoint names' numbers), in store order. */
export async function checkpointSteps(store: BlobStore, runId: string): Promise<number[]> {
  const found = await store.listNames(names.checkpointPrefix(runId));
  return found.map(stepOfName).filter(Number.isFinite);
}
