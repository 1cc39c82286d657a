import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { FsBlobStore } from '../../src/store/fs-blob-store';

export function tempStore(label: string): FsBlobStore {
  return new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${label}-`)));
}

/** The step of every checkpoint blob in a folder store, by the blobs' magic header (a checkpoint written twice with other bytes shows twice). */
export async function checkpointBlobSteps(store: FsBlobStore): Promise<number[]> {
  const steps: number[] = [];
  const dir = path.join(store.root, 'blobs');
  for (const sub of await fs.promises.readdir(dir)) {
    for (const file of await fs.promises.readdir(path.join(dir, sub))) {
      const bytes = await fs.promises.readFile(path.join(dir, sub, file));
      if (bytes.subarray(0, 8).toString('latin1') === 'DRLCKPT1') steps.push(decodeCheckpoint(new Uint8Array(bytes)).step);
    }
  }
  return steps.sort((a, b) => a - b);
}
