/** Runs the Temporal CLI the setup built, the way a user would type it. */
import { spawnSync } from 'node:child_process';
import { temporalCliPath } from './dev-server';

export function runTemporalCli(args: string[]): string {
  const res = spawnSync(temporalCliPath(), args, { encoding: 'utf8' });
  if (res.error) throw res.error;
  if (res.status !== 0) {
    throw new Error(`temporal ${args.join(' ')} exited with ${res.status}:\n${res.stderr || res.stdout}`);
  }
  return res.stdout;
}
