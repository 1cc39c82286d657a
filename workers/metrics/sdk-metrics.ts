/**
 * The Temporal SDK's runtime metrics (worker slots, poll latencies, task counts, sticky cache...)
 * come from its Rust core, which serves them itself when the Runtime is installed with a Prometheus
 * bindAddress. We bind that exporter to a loopback port of its own and let metrics-server.ts serve it
 * together with the project's metrics on the one public port, so each worker is one scrape target.
 *
 * Must run before anything creates a connection: the Runtime is installed once per process.
 */
import net from 'node:net';
import { Runtime } from '@temporalio/worker';

export async function installSdkMetrics(): Promise<{ url: string }> {
  const port = await loopbackPort();
  Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${port}` } } } });
  return { url: `http://127.0.0.1:${port}/metrics` };
}

/** A port free on 127.0.0.1 right now (the core binds it moments later). */
function loopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port assigned'))));
    });
  });
}
