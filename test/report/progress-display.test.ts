/**
 * The main job's progress off a terminal (issue 36, item 6): plain lines, one when the phase changes
 * and otherwise at most one per PLAIN_EVERY_MS while the state changes, never the same line twice in
 * a row, and the last state once more when it ends (the progress bar printed a line per redraw,
 * hundreds of identical ones in a log).
 */
import { PassThrough } from 'node:stream';
import type { RunProgress } from '../../src/contracts/training-run';
import { PLAIN_EVERY_MS, PlainProgress, followProgress, progressDisplay, progressLine } from '../../scripts/lib/progress-display';

const at = (step: number, phase: RunProgress['phase'] = 'sft', lastLoss?: number): RunProgress => ({ phase, step, totalSteps: 300, weightVersion: 0, ...(lastLoss === undefined ? {} : { lastLoss }) });

test('prints on a phase change, else a changed state at most every PLAIN_EVERY_MS, never a repeat, and the last state at the end', () => {
  const lines: string[] = [];
  let now = 0;
  const display = new PlainProgress((l) => lines.push(l), () => now);
  // A poll a second for ten minutes of SFT (a step every 2 s), then evaluation, then nothing new.
  for (let s = 0; s < 600; s++, now += 1000) display.update(at(Math.floor(s / 2), 'sft', 2 - s / 600));
  display.update(at(300, 'eval', 1));
  for (let s = 0; s < 300; s++, now += 1000) display.update(at(300, 'eval', 1));
  display.log('Temporal server 127.0.0.1:7233 unreachable, waiting for it');
  display.update(at(300, 'report', 1));
  display.stop();
  display.update(at(300, 'done', 1));

  expect(lines[0]).toBe(progressLine(at(0, 'sft', 2)));
  const sft = lines.filter((l) => l.includes('| sft |'));
  // 600 s of SFT: the first line, then one per 30 s.
  expect(sft).toHaveLength(600_000 / PLAIN_EVERY_MS);
  expect(lines.filter((l, i) => i > 0 && l === lines[i - 1])).toEqual([]);
  expect(lines.filter((l) => l.includes('| eval |'))).toEqual([progressLine(at(300, 'eval', 1))]);
  expect(lines.slice(-2)).toEqual(['Temporal server 127.0.0.1:7233 unreachable, waiting for it', progressLine(at(300, 'report', 1))]);
  expect(lines.some((l) => l.includes('| done |'))).toBe(false);
});

test('prints the last state at the end when it changed since the last line', () => {
  const lines: string[] = [];
  const display = new PlainProgress((l) => lines.push(l), () => 0);
  display.update(at(1));
  display.update(at(2));
  display.stop();
  display.stop();
  expect(lines).toEqual([progressLine(at(1)), progressLine(at(2))]);
});

test('a stream that is not a terminal gets plain lines, no bar', () => {
  const stream = Object.assign(new PassThrough(), { isTTY: false }) as unknown as NodeJS.WriteStream;
  let written = '';
  (stream as unknown as PassThrough).on('data', (b: Buffer) => (written += b.toString()));
  const display = progressDisplay(stream);
  display.update(at(3));
  display.stop();
  expect(written).toBe(`${progressLine(at(3))}\n`);
});

test('stopping with a last poll shows where the run ended, even if it ended between two polls', async () => {
  const lines: string[] = [];
  let step = 10;
  const display = new PlainProgress((l) => lines.push(l), () => 0);
  const stop = followProgress(async () => at(step), display);
  await new Promise((r) => setTimeout(r, 1_300));
  // The run's last two steps and its end fall between this poll and the next.
  step = 12;
  await stop(true);
  expect(lines).toEqual([progressLine(at(10)), progressLine(at(12))]);
});

test('stopping without a last poll (a signal) does not poll, and a failed last poll keeps the display', async () => {
  const lines: string[] = [];
  let polls = 0;
  const display = new PlainProgress((l) => lines.push(l), () => 0);
  const stop = followProgress(async () => (polls++ === 0 ? at(5) : Promise.reject(new Error('server away'))), display);
  await new Promise((r) => setTimeout(r, 1_300));
  await stop(true);
  await stop(true);
  expect(lines).toEqual([progressLine(at(5))]);
  const quiet = followProgress(async () => at(7), new PlainProgress((l) => lines.push(l), () => 0));
  await quiet();
  expect(lines).toEqual([progressLine(at(5))]);
});
