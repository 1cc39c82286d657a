/**
 * One real Temporal dev server (in memory, headless) and one real S3-compatible server (versitygw
 * over a temporary folder, with one bucket for the tests) for the whole test run, and the run's
 * scratch folder (test/setup/scratch.ts): temporary folders and runs' metrics files go there.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, startDevServerOnFreePort } from '../../scripts/lib/dev-server';
import { startS3Server } from '../../scripts/lib/s3-server';
import { createScratch } from './scratch';

export const TEST_BUCKET = 'durable-rl-test';

export default async function globalSetup(): Promise<void> {
  // First: the test files (jest's workers start after this) and everything they start inherit it.
  const scratch = createScratch();
  Object.assign(process.env, scratch.env);
  const s3Dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-test-s3-'));
  const [server, s3] = await Promise.all([
    startDevServerOnFreePort({
      logFile: path.resolve(__dirname, '../../.data/test-temporal.log'),
      detached: false,
    }),
    freePort().then((s3Port) => startS3Server({ port: s3Port, dataDir: s3Dir, logFile: path.resolve(__dirname, '../../.data/test-s3.log') })),
  ]);
  await s3.createBucket(TEST_BUCKET);
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  process.env.DURABLE_RL_TEST_S3_ENDPOINT = s3.endpoint;
  process.env.DURABLE_RL_TEST_S3_BUCKET = TEST_BUCKET;
  const g = globalThis as { __temporalServer?: { stop(): Promise<void> }; __s3Server?: { stop(): Promise<void> }; __s3Dir?: string; __scratchDir?: string };
  g.__temporalServer = server;
  g.__s3Server = s3;
  g.__s3Dir = s3Dir;
  g.__scratchDir = scratch.dir;
}
