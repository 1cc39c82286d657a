/**
 * The main job's server: TEMPORAL_ADDRESS if set, else the dev server on :7233 with the Web UI on
 * :8233 and histories in .data/temporal.db. It is left running so the run stays inspectable.
 */
import fs from 'node:fs';
import path from 'node:path';
import { portOpen, startDevServer, waitForServer } from './dev-server';

import { DATA_DIR } from '../../src/paths';

export const DB_FILE = path.join(DATA_DIR, 'temporal.db');
export const PID_FILE = path.join(DATA_DIR, 'temporal.pid');
export const LOCAL_ADDRESS = '127.0.0.1:7233';
export const UI_URL = 'http://localhost:8233';

export interface ServerHandle {
  address: string;
  uiUrl?: string;
  startedHere: boolean;
  /** The local dev server's process: started here, or the one its pid file names (absent for TEMPORAL_ADDRESS). */
  pid?: number;
}

export async function ensureServer(opts: { headless?: boolean } = {}): Promise<ServerHandle> {
  const external = process.env.TEMPORAL_ADDRESS;
  if (external) {
    await waitForServer(external, 10_000);
    return { address: external, startedHere: false };
  }
  if (await portOpen(LOCAL_ADDRESS)) {
    await waitForServer(LOCAL_ADDRESS, 30_000);
    const pid = runningDevServerPid();
    return { address: LOCAL_ADDRESS, uiUrl: UI_URL, startedHere: false, ...(pid ? { pid } : {}) };
  }
  const server = await startDevServer({
    port: 7233,
    uiPort: opts.headless ? undefined : 8233,
    dbFile: DB_FILE,
    logFile: path.join(DATA_DIR, 'temporal-server.log'),
    detached: true,
  });
  fs.writeFileSync(PID_FILE, String(server.pid));
  return { address: server.address, uiUrl: opts.headless ? undefined : UI_URL, startedHere: true, pid: server.pid };
}

/** The pid in PID_FILE while that process is still a Temporal dev server; undefined otherwise. */
function runningDevServerPid(): number | undefined {
  try {
    const pid = Number(fs.readFileSync(PID_FILE, 'utf8').trim());
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return Number.isInteger(pid) && cmdline.includes('start-dev') ? pid : undefined;
  } catch {
    return undefined;
  }
}
