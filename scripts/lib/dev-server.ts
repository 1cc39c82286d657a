/**
 * Starts and finds the Temporal CLI dev server (`temporal server start-dev`) that the project's
 * setup builds from the Go module proxy. Used by the main job, the UI command and the test setup.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_TYPES } from '../../workflows/search-attributes';
import { spawnLogged } from './logged-process';
import { niced } from './niced';

export const TEMPORAL_CLI_VERSION = '1.5.1';

export function temporalCliPath(): string {
  if (process.env.TEMPORAL_CLI) return process.env.TEMPORAL_CLI;
  const cache = process.env.DURABLE_RL_CACHE ?? path.join(os.homedir(), '.cache', 'durable-rl');
  return path.join(cache, `temporal-cli-v${TEMPORAL_CLI_VERSION}`, 'temporal');
}

export interface DevServerOptions {
  port: number;
  /** Web UI port; omit for a headless server. */
  uiPort?: number;
  /** SQLite file that keeps histories across restarts; omit for in-memory. */
  dbFile?: string;
  logFile: string;
  /** Keep running after this process exits (the main job leaves the server up for the Web UI). */
  detached: boolean;
  /** Dynamic config values on top of the project's (benchmarks compare settings). */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Start it under `nice -n <nice>` (every thread of it; scripts/lib/niced.ts): a benchmark that favours another process. */
  nice?: number;
  /** false: without the project's search attributes in namespace default, as a server set up elsewhere may be (tests). */
  searchAttributes?: boolean;
}

export function devServerArgs(opts: DevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn'];
  if (opts.uiPort === undefined) args.push('--headless');
  else args.push('--ui-port', String(opts.uiPort));
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (opts.searchAttributes !== false) for (const [name, type] of Object.entries(SEARCH_ATTRIBUTE_TYPES)) args.push('--search-attribute', `${name}=${type}`);
  for (const kv of [
    // update-with-start (the rollout barrier) and fresh search-attribute caches for just-registered keys.
    'frontend.enableExecuteMultiOperation=true',
    'frontend.enableUpdateWorkflowExecution=true',
    'system.forceSearchAttributesCacheRefreshOnRead=true',
    // The dev server keeps every workflow in one history shard, and the shard's transfer and timer
    // queues are read at most 20 times a second by default (a per-shard limit sized for clusters of
    // hundreds of shards). Every activity and workflow task then waits for the next read: a chain
    // of no-op activities takes ~80 ms a hop with the default and ~20 ms with this (bench:hops).
    'history.transferProcessorMaxPollRPS=1000',
    'history.timerProcessorMaxPollRPS=1000',
  ]) {
    args.push('--dynamic-config-value', kv);
  }
  // Later values win: the CLI keeps the last one given for a key.
  for (const [key, value] of Object.entries(opts.dynamicConfig ?? {})) args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return args;
}

export interface RunningServer {
  address: string;
  pid: number;
  /** SIGTERM, resolving once the process has exited. */
  stop(): Promise<void>;
}

export async function startDevServer(opts: DevServerOptions): Promise<RunningServer> {
  const binary = temporalCliPath();
  if (!fs.existsSync(binary)) {
    throw new Error(`Temporal CLI not found at ${binary}; run scripts/setup.sh (it builds the CLI once)`);
  }
  if (opts.dbFile) fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const [command, args] = niced(opts.nice, binary, devServerArgs(opts));
  const { child, exitCode, exited: exit } = spawnLogged(command, args, { logFile: opts.logFile, detached: opts.detached });
  const address = `127.0.0.1:${opts.port}`;
  await waitForServer(address, 60_000, () => exitCode() !== null);
  if (exitCode() !== null) throw new Error(`Temporal dev server exited with ${exitCode()}; see ${opts.logFile}`);
  const pid = child.pid ?? -1;
  return {
    address,
    pid,
    stop: async () => {
      if (exitCode() === null) child.kill('SIGTERM');
      await exit;
    },
  };
}

/**
 * A headless or UI dev server on a port the OS reported free. Between that report and the server's
 * bind the port can be taken (by another process, or by the server itself, which picks free ports
 * for its internal services first); the server then exits with "address already in use" (seen in a
 * suite run beside experiments). Tries again on another port, up to `attempts` times.
 */
export async function startDevServerOnFreePort(
  opts: Omit<DevServerOptions, 'port'>,
  { attempts = 3, pickPort = freePort }: { attempts?: number; pickPort?: () => Promise<number> } = {},
): Promise<RunningServer> {
  for (let attempt = 1; ; attempt++) {
    // The log is appended to: only this attempt's part tells why it failed.
    const logStart = fs.existsSync(opts.logFile) ? fs.statSync(opts.logFile).size : 0;
    try {
      return await startDevServer({ ...opts, port: await pickPort() });
    } catch (err) {
      const log = fs.existsSync(opts.logFile) ? fs.readFileSync(opts.logFile).subarray(logStart).toString('utf8') : '';
      if (attempt >= attempts || !log.includes('address already in use')) throw err;
    }
  }
}

/** Resolves once the frontend answers; polls because the server takes seconds to start on 2 cores. */
export async function waitForServer(address: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline && !gaveUp()) {
    if (await portOpen(address)) {
      try {
        const connection = await Connection.connect({ address, connectTimeout: 2_000 });
        try {
          await connection.workflowService.getSystemInfo({});
          return;
        } finally {
          await connection.close();
        }
      } catch (err) {
        lastError = err;
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (gaveUp()) return;
  throw new Error(`Temporal server at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

export function portOpen(address: string): Promise<boolean> {
  const [host, port] = splitAddress(address);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function splitAddress(address: string): [string, number] {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i) || '127.0.0.1', Number(address.slice(i + 1))];
}

