import fs from 'node:fs';
import { removeScratch } from './scratch';

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as { __temporalServer?: { stop(): Promise<void> }; __s3Server?: { stop(): Promise<void> }; __s3Dir?: string; __scratchDir?: string };
  await Promise.all([g.__temporalServer?.stop(), g.__s3Server?.stop()]);
  if (g.__s3Dir) fs.rmSync(g.__s3Dir, { recursive: true, force: true });
  if (g.__scratchDir) removeScratch(g.__scratchDir);
}
