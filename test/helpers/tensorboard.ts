/**
 * A run's TensorBoard event files read back with TensorBoard's own reader (EventAccumulator, in
 * TensorBoard's environment from scripts/setup-python.sh), as "tag@step=value" strings, sorted.
 */
import { execFileSync } from 'node:child_process';
import { tensorboardPython } from '../../activities/tensorboard-writer';
import type { TrackedLine } from '../../src/tracking/mlflow-batch';
import { metricsOfLine } from '../../src/tracking/mlflow-batch';

const READER = `
import json, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator, SCALARS
ea = EventAccumulator(sys.argv[1], size_guidance={SCALARS: 0})
ea.Reload()
print(json.dumps({t: [[e.step, e.value] for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}))
`;

/** Every scalar TensorBoard reads in the run's folder, one string per point (duplicates kept). */
export function readTensorboardPoints(runDir: string): string[] {
  const out = execFileSync(tensorboardPython(), ['-c', READER, runDir], { encoding: 'utf8' });
  const byTag = JSON.parse(out) as Record<string, Array<[number, number]>>;
  return Object.entries(byTag).flatMap(([tag, points]) => points.map(([step, value]) => `${tag}@${step}=${value}`)).sort();
}

/** The points of `lines` as TensorBoard holds them (values as 32-bit floats, as event files store scalars). */
export function expectedTensorboardPoints(lines: TrackedLine[]): string[] {
  return lines.flatMap((l) => metricsOfLine(l, 0)).map((m) => `${m.key}@${m.step}=${Math.fround(m.value)}`).sort();
}
