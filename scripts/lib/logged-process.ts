/**
 * A server process the scripts and tests start (Temporal dev server, versitygw, vLLM): its output
 * appended to a log file, optionally detached to outlive this process, and its exit watched so a
 * caller waiting for it to serve can stop waiting once it has died.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface LoggedProcess {
  child: ChildProcess;
  /** The exit code once it has exited (-1 for a signal), else null. */
  exitCode(): number | null;
  /** Resolves when it has exited. */
  exited: Promise<void>;
}

export function spawnLogged(binary: string, args: string[], opts: { logFile: string; detached?: boolean; env?: NodeJS.ProcessEnv }): LoggedProcess {
  fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
  const log = fs.openSync(opts.logFile, 'a');
  const child = spawn(binary, args, { detached: opts.detached ?? false, stdio: ['ignore', log, log], ...(opts.env ? { env: opts.env } : {}) });
  fs.closeSync(log);
  if (opts.detached) child.unref();
  let code: number | null = null;
  const exited = new Promise<void>((resolve) =>
    child.on('exit', (c) => {
      code = c ?? -1;
      resolve();
    }),
  );
  return { child, exitCode: () => code, exited };
}
