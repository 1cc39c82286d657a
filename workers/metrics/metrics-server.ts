/**
 * GET /metrics on the worker's metrics port: the Temporal SDK's exposition (fetched from its loopback
 * exporter, see sdk-metrics.ts) followed by the project's prom-client registry. Both are Prometheus
 * text format 0.0.4 with disjoint names (temporal_* and durable_rl_* / process_* / nodejs_*), so the
 * concatenation is one valid exposition. If the SDK exporter does not answer, the project's metrics
 * are still served, after a comment saying why the SDK's are missing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  /** http://host:port/metrics as bound (the real port when 0 was asked for). */
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(opts: { host: string; port: number; registry: Registry; sdkUrl?: string }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '/').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; metrics are at /metrics\n');
      return;
    }
    exposition(opts.registry, opts.sdkUrl).then(
      (body) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(body),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host === '0.0.0.0' || opts.host === '::' ? '127.0.0.1' : opts.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function exposition(registry: Registry, sdkUrl: string | undefined): Promise<string> {
  const ours = await registry.metrics();
  if (!sdkUrl) return ours;
  let sdk: string;
  try {
    const res = await fetch(sdkUrl, { signal: AbortSignal.timeout(2_000) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    sdk = await res.text();
  } catch (err) {
    sdk = `# Temporal SDK metrics unavailable from ${sdkUrl}: ${String(err).replace(/\n/g, ' ')}\n`;
  }
  return `${sdk}${sdk.endsWith('\n') || sdk === '' ? '' : '\n'}${ours}`;
}
