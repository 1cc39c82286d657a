/**
 * tracking.tensorboard: where a run's TensorBoard event file goes (<dir>/<workflow id>, a run of
 * TensorBoard's log directory), whether that folder can be made, and the points written there: the
 * same as MLflow's (mlflow-batch.ts: one per numeric field of each logged line, at its step), with
 * the workflow's time when the line was made as their wall time, so a retried write is the same write.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { KeyProblem } from '../config/refusals';
import type { TrackingBatch } from '../contracts/tracking';
import { REPO_ROOT } from '../paths';
import { metricsOfLine, type TrackedLine } from './mlflow-batch';

export const TENSORBOARD_DIR_KEY = 'tracking.tensorboard.dir';

/** One scalar as the writer takes it: tag, step, value, wall time in seconds. */
export type TensorboardPoint = [tag: string, step: number, value: number, wallTime: number];

/** The run's folder in the log directory (a relative `dir` is the repository's); the workflow id as one folder name. */
export function tensorboardRunDir(dir: string, workflowId: string): string {
  const name = workflowId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\./, '_');
  return path.join(path.resolve(REPO_ROOT, dir), name);
}

/** The run's folder made (if missing); a problem naming tracking.tensorboard.dir when it cannot be. */
export async function makeTensorboardRunDir(runDir: string): Promise<KeyProblem | undefined> {
  try {
    await fs.mkdir(runDir, { recursive: true });
    // Made, or there already: a folder this process can write in.
    const probe = path.join(runDir, `.durable-rl-probe-${process.pid}`);
    await fs.writeFile(probe, '');
    await fs.rm(probe);
    return undefined;
  } catch (err) {
    return { path: TENSORBOARD_DIR_KEY, message: `cannot write TensorBoard's event file in ${runDir}: ${(err as Error).message}` };
  }
}

/** The batches' points in order (tag, step, value, the batch's workflow time in seconds). */
export function tensorboardPoints(batches: readonly TrackingBatch[]): TensorboardPoint[] {
  return batches.flatMap((b) => (b.lines as TrackedLine[]).flatMap((l) => metricsOfLine(l, b.timestamp)).map((m): TensorboardPoint => [m.key, m.step, m.value, m.timestamp / 1000]));
}
