/** `npm run replay`: an exported history replays; a tampered one is reported with its divergence. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

const histories = path.join(REPO_ROOT, 'test', 'histories');
const script = path.join(REPO_ROOT, 'dist', 'scripts', 'replay.js');

function run(args: string[]): { code: number; out: string } {
  try {
    return { code: 0, out: execFileSync('node', [script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }) };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: `${e.stdout}${e.stderr}` };
  }
}

test('an exported history replays (its workflow id read off its children)', () => {
  const r = run([path.join(histories, 'training-run-rl-v2.json')]);
  expect(r.out).toMatch(/replays against the current workflow code/);
  expect(r.code).toBe(0);
});

test('a tampered history is reported with where it diverges', () => {
  const history = JSON.parse(fs.readFileSync(path.join(histories, 'training-run-sft.json'), 'utf8')) as { events: Array<Record<string, unknown>> };
  // The first activity the workflow scheduled now claims to be another activity type.
  const scheduled = history.events.find((e) => e.activityTaskScheduledEventAttributes) as { activityTaskScheduledEventAttributes: { activityType: { name: string } } };
  expect(scheduled.activityTaskScheduledEventAttributes.activityType.name).toBe('prepareSftDataset');
  scheduled.activityTaskScheduledEventAttributes.activityType.name = 'somethingElse';
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'replay-')), 'tampered.json');
  fs.writeFileSync(file, JSON.stringify(history));
  const r = run([file]);
  expect(r.code).toBe(1);
  expect(r.out).toMatch(/diverges/);
  expect(r.out).toMatch(/prepareSftDataset|somethingElse/);
});

test('a missing file is a usage error', () => {
  expect(run(['/nonexistent/history.json']).code).toBe(2);
});
