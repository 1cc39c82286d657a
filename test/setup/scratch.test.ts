/**
 * A test run leaves nothing where the user's things are (issue 36): its runs' metrics files go to a
 * folder of its own, not the clone's .data/runs (which the rollout viewer lists), and its temporary
 * folders, its processes' included, go to the run's scratch folder, which the global teardown removes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DATA_DIR, defaultRunsDir } from '../../src/paths';
import { createScratch, removeScratch, SCRATCH_ENV } from './scratch';

const scratch = process.env[SCRATCH_ENV];

test('runs write their metrics files under the test run’s scratch folder, not .data/runs', () => {
  expect(scratch).toBeDefined();
  expect(defaultRunsDir()).not.toBe(path.join(DATA_DIR, 'runs'));
  expect(path.relative(scratch!, defaultRunsDir())).not.toMatch(/^\.\./);
});

test('temporary folders of the tests and of the processes they start are made in the scratch folder', () => {
  expect(path.relative(scratch!, os.tmpdir())).not.toMatch(/^\.\./);
  const child = spawnSync(process.execPath, ['-e', 'console.log(JSON.stringify([require("os").tmpdir(), process.env.DURABLE_RL_RUNS]))'], { encoding: 'utf8' });
  expect(JSON.parse(child.stdout)).toEqual([os.tmpdir(), defaultRunsDir()]);
});

test('the scratch folder and all in it are removed', () => {
  const { dir, env } = createScratch(os.tmpdir());
  fs.mkdirSync(path.join(env.TMPDIR!, 'vllm-test-x', 'model'), { recursive: true });
  fs.writeFileSync(path.join(env.DURABLE_RL_RUNS!, 'run.input.json'), '{}');
  removeScratch(dir);
  expect(fs.existsSync(dir)).toBe(false);
});
