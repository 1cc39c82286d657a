/**
 * One scratch folder per test run, so a test run leaves nothing behind where the user's things are:
 * every temporary folder a test, a worker process, vLLM or chromium makes (os.tmpdir(), Python's
 * tempfile: both read TMPDIR) and every run's metrics file (DURABLE_RL_RUNS, instead of the
 * clone's .data/runs, which the rollout viewer lists) go under it, and the global teardown removes it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Names the test run's scratch folder in the environment of the tests and what they start. */
export const SCRATCH_ENV = 'DURABLE_RL_TEST_SCRATCH';

/** A fresh scratch folder under the system's temporary folder, and the environment that points there. */
export function createScratch(parent = os.tmpdir()): { dir: string; env: Record<string, string> } {
  const dir = fs.mkdtempSync(path.join(parent, 'durable-rl-test-'));
  const tmp = path.join(dir, 'tmp');
  const runs = path.join(dir, 'runs');
  fs.mkdirSync(tmp);
  fs.mkdirSync(runs);
  return { dir, env: { [SCRATCH_ENV]: dir, TMPDIR: tmp, DURABLE_RL_RUNS: runs } };
}

export function removeScratch(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
