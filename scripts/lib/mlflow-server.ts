/**
 * A real MLflow tracking server (`mlflow server` from the environment scripts/setup-python.sh builds,
 * scripts/python/mlflow.txt) over SQLite: the main job starts one when a run's tracking.mlflow.uri is
 * the local default and nothing answers there (like the Temporal dev server, left running for its
 * UI), and the tests start their own on a free port.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR } from '../../src/paths';
import { freePort } from './dev-server';
import { spawnLogged } from './logged-process';
import { mlflowBin } from './python-env';

/** tracking.mlflow.uri whose server the main job starts when nothing answers there (MLflow's own default port). */
export const LOCAL_MLFLOW_URI = 'http://127.0.0.1:5000';
export const MLFLOW_DIR = path.join(DATA_DIR, 'mlflow');
export const MLFLOW_PID_FILE = path.join(MLFLOW_DIR, 'mlflow.pid');

export interface MlflowServerOptions {
  port: number;
  /** Holds mlflow.db (runs, parameters, metrics) and artifacts/. */
  dir: string;
  logFile: string;
  /**
   * MLflow's basic-auth app (`--app-name basic-auth`), its users in <dir>/basic_auth.db: user
   * `admin` with this password, anyone else refused (401), everyone may read. For the tests of
   * refused credentials; the main job's local server has no authentication.
   */
  basicAuth?: { adminPassword: string };
}

export interface RunningMlflow {
  uri: string;
  pid: number;
  /** SIGTERM to the server's process group (uvicorn's worker too), resolving once it has exited. */
  stop(): Promise<void>;
}

export async function startMlflowServer(opts: MlflowServerOptions): Promise<RunningMlflow> {
  fs.mkdirSync(opts.dir, { recursive: true });
  const args = [
    'server', '--host', '127.0.0.1', '--port', String(opts.port),
    // One worker process: the server answers one run's batches; more would take cores from training.
    '--workers', '1',
    '--backend-store-uri', `sqlite:///${path.resolve(opts.dir, 'mlflow.db')}`,
    '--artifacts-destination', path.resolve(opts.dir, 'artifacts'),
  ];
  // Its own process group (detached: it outlives the main job, for its UI), so stop() reaches uvicorn's worker too.
  // No job execution (GenAI scorers; seven Huey consumer processes by default): tracking needs none.
  const env = { ...process.env, MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false', MLFLOW_SERVER_JOB_ENABLE_PERIODIC_TASKS: 'false', ...(opts.basicAuth ? basicAuthSetup(opts.dir, opts.basicAuth.adminPassword) : {}) };
  if (opts.basicAuth) args.push('--app-name', 'basic-auth');
  const { child, exitCode, exited } = spawnLogged(mlflowBin(), args, { logFile: opts.logFile, detached: true, env });
  const uri = `http://127.0.0.1:${opts.port}`;
  // A cold start (imports, the database's migrations) takes ~16 s on 2 cores.
  await waitForMlflow(uri, 120_000, () => exitCode() !== null);
  if (exitCode() !== null) throw new Error(`mlflow server exited with ${exitCode()}; see ${opts.logFile}`);
  const pid = child.pid ?? -1;
  return {
    uri,
    pid,
    stop: async () => {
      if (exitCode() === null) {
        try {
          process.kill(-pid, 'SIGTERM');
        } catch {
          child.kill('SIGTERM');
        }
      }
      await exited;
    },
  };
}

/** The basic-auth app's config file (mlflow/server/auth/basic_auth.ini's keys) and the environment that points the server at it. */
function basicAuthSetup(dir: string, adminPassword: string): Record<string, string> {
  const ini = path.resolve(dir, 'basic_auth.ini');
  const lines = [
    '[mlflow]',
    'default_permission = READ',
    `database_uri = sqlite:///${path.resolve(dir, 'basic_auth.db')}`,
    'admin_username = admin',
    'authorization_function = mlflow.server.auth:authenticate_request_basic_auth',
  ];
  fs.writeFileSync(ini, `${lines.join('\n')}\n`);
  // The admin's password is read when its user store is made; the app's CSRF protection needs a secret key.
  return { MLFLOW_AUTH_CONFIG_PATH: ini, MLFLOW_AUTH_ADMIN_PASSWORD: adminPassword, MLFLOW_FLASK_SERVER_SECRET_KEY: randomBytes(16).toString('hex') };
}

export async function startMlflowOnFreePort(opts: Omit<MlflowServerOptions, 'port'>): Promise<RunningMlflow> {
  return startMlflowServer({ ...opts, port: await freePort() });
}

/** Whether an MLflow server answers /health at `uri`. */
export async function mlflowAnswers(uri: string): Promise<boolean> {
  try {
    const res = await fetch(`${uri.replace(/\/+$/, '')}/health`, { signal: AbortSignal.timeout(2_000) });
    return res.ok;
  } catch {
    return false;
  }
}

export async function waitForMlflow(uri: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !gaveUp()) {
    if (await mlflowAnswers(uri)) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (gaveUp()) return;
  throw new Error(`mlflow server at ${uri} did not answer within ${timeoutMs} ms`);
}

/**
 * The main job's tracker: when the run's URI is the local default and nothing answers there, an
 * `mlflow server` started over .data/mlflow and left running (its pid in .data/mlflow/mlflow.pid);
 * any other URI is the user's, used as it is.
 */
export async function ensureLocalMlflow(uri: string): Promise<{ startedHere: boolean; pid?: number } | undefined> {
  if (uri.replace(/\/+$/, '') !== LOCAL_MLFLOW_URI) return undefined;
  if (await mlflowAnswers(uri)) return { startedHere: false };
  const server = await startMlflowServer({ port: Number(new URL(LOCAL_MLFLOW_URI).port), dir: MLFLOW_DIR, logFile: path.join(MLFLOW_DIR, 'server.log') });
  fs.writeFileSync(MLFLOW_PID_FILE, String(server.pid));
  return { startedHere: true, pid: server.pid };
}
