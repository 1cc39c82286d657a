import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { FsBlobStore } from '../../src/store/fs-blob-store';

export function tempStore(label: string): FsBlobStore {
  return new FsBlobStore(fs.mkdtempSync(path.join(os.tmpdir(), `durable-rl-${label}-`)));
}
