/** One real Temporal dev server (in memory, headless) for the whole test run. */
import path from 'node:path';
import { freePort, startDevServer } from '../../scripts/lib/dev-server';

export default async function globalSetup(): Promise<void> {
  const port = await freePort();
  const server = await startDevServer({
    port,
    logFile: path.resolve(__dirname, '../../.data/test-temporal.log'),
    detached: false,
  });
  process.env.TEMPORAL_TEST_ADDRESS = server.address;
  (globalThis as { __temporalServer?: { stop(): Promise<void> } }).__temporalServer = server;
}
