/**
 * tracking.tensorboard: a run's or job's TensorBoard event file, fed from the workflow. Every line
 * logged is queued, and one write activity at a time takes the whole queue, in order: the writer
 * appends only points beyond what the file holds per tag (scripts/python/tensorboard_writer.py), so
 * writes must not overtake each other, and a retried or replayed write adds nothing. Training does
 * not wait for them: a write is retried with backoff while the folder cannot be written. The queue
 * (written or not) goes with the state into a continue-as-new and is written again there; at its end
 * the run waits for it, at most FINISH_WAIT.
 */
import { condition, log, workflowInfo } from '@temporalio/workflow';
import type { TensorboardState, TrackingBatch } from '../src/contracts/tracking';
import type { TrackedLine } from '../src/tracking/mlflow-batch';
import { tensorboardProxies } from './activity-proxies';
import { workflowNow } from './clock';
import { FINISH_WAIT } from './training-run/tracker';

/** Batches one write takes at most (a queue that grew while the folder could not be written goes in several). */
const MAX_BATCHES_PER_WRITE = 64;

export class TensorboardLog {
  private readonly activities = tensorboardProxies();
  /** Logged and not yet written, oldest first (the write in flight's batches included). */
  private readonly queue: TrackingBatch[];
  private writing = false;

  constructor(
    readonly runDir: string,
    carried: TrackingBatch[] = [],
  ) {
    this.queue = [...carried];
    this.writeNext();
  }

  /** The run's folder in `dir`, made and checked writable (one that is not refuses the run, naming tracking.tensorboard.dir). */
  static async open(dir: string, continued: boolean): Promise<TensorboardLog> {
    const { runDir } = await tensorboardProxies().open({ dir, workflowId: workflowInfo().workflowId, continued });
    return new TensorboardLog(runDir);
  }

  /** Queues the lines (their time: now, the workflow's) without waiting. */
  log(lines: TrackedLine[]): void {
    if (lines.length === 0) return;
    this.queue.push({ lines, timestamp: workflowNow() });
    this.writeNext();
  }

  /** What the state keeps: the folder, and what a continue-as-new must write again. */
  state(): TensorboardState {
    return { runDir: this.runDir, ...(this.queue.length > 0 ? { unconfirmed: [...this.queue] } : {}) };
  }

  /** Waits (at most FINISH_WAIT) for the queue to be written. */
  async finish(): Promise<void> {
    if (!(await condition(() => this.queue.length === 0 && !this.writing, FINISH_WAIT))) {
      log.warn('TensorBoard did not take every point of the run in time', { batches: this.queue.length, runDir: this.runDir });
    }
  }

  private writeNext(): void {
    if (this.writing || this.queue.length === 0) return;
    const batches = this.queue.slice(0, MAX_BATCHES_PER_WRITE);
    this.writing = true;
    void this.activities
      .write({ runDir: this.runDir, batches })
      // Only a refusal no retry changes ends the retries: those points are dropped, training goes on.
      .catch((err: unknown) => void log.warn('TensorBoard refused a write', { error: String(err), batches: batches.length }))
      .then(() => {
        this.queue.splice(0, batches.length);
        this.writing = false;
        this.writeNext();
      });
  }
}
