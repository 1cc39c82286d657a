/**
 * tracking.tensorboard: a run's or job's TensorBoard event file, fed from the workflow. Every line
 * logged is queued, and one write activity at a time takes the queue, in order, at most FLUSH_EVERY
 * after its oldest line was logged (one activity for several RL steps): the writer
 * appends only points beyond what the file holds per tag (scripts/python/tensorboard_writer.py), so
 * writes must not overtake each other, and a retried or replayed write adds nothing. Training does
 * not wait for them: a write is retried with backoff while the folder cannot be written. The queue
 * (written or not) goes with the state into a continue-as-new and is written again there; at its end
 * (finished, failed or cancelled) the run writes what is queued and waits for it, at most FINISH_WAIT.
 */
import { condition, isCancellation, log, sleep, workflowInfo } from '@temporalio/workflow';
import type { TensorboardState, TrackingBatch } from '../src/contracts/tracking';
import type { TrackedLine } from '../src/tracking/mlflow-batch';
import { tensorboardProxies } from './activity-proxies';
import { workflowNow } from './clock';
import { FINISH_WAIT } from './training-run/tracker';

/** Batches one write takes at most (a queue that grew while the folder could not be written goes in several). */
const MAX_BATCHES_PER_WRITE = 64;

/**
 * How long logged lines wait for what follows them: one write for several RL steps, since each
 * write is an activity, Temporal's 12-20 ms of CPU (docs/benchmarks.md). TensorBoard's UI reloads
 * every 30 s; its own writers flush every 2 minutes.
 */
const FLUSH_EVERY = '30s';

export class TensorboardLog {
  private readonly activities = tensorboardProxies();
  /** Logged and not yet written, oldest first (the write in flight's batches included). */
  private readonly queue: TrackingBatch[];
  private writing = false;
  private flushPending = false;
  /** A write came back cancelled (the run was): its lines stay queued for finish() to write from its own scope. */
  private cancelled = false;
  private finishing = false;

  constructor(
    readonly runDir: string,
    carried: TrackingBatch[] = [],
  ) {
    this.queue = [...carried];
    // Carried from the last execution: they have waited already.
    this.writeNext();
  }

  /** The run's folder in `dir`, made and checked writable (one that is not refuses the run, naming tracking.tensorboard.dir). */
  static async open(dir: string, continued: boolean): Promise<TensorboardLog> {
    const { runDir } = await tensorboardProxies().open({ dir, workflowId: workflowInfo().workflowId, continued });
    return new TensorboardLog(runDir);
  }

  /** Queues the lines (their time: now, the workflow's) without waiting; they are written within FLUSH_EVERY. */
  log(lines: TrackedLine[]): void {
    if (lines.length === 0) return;
    this.queue.push({ lines, timestamp: workflowNow() });
    this.flushLater();
  }

  /** What the state keeps: the folder, and what a continue-as-new must write again. */
  state(): TensorboardState {
    return { runDir: this.runDir, ...(this.queue.length > 0 ? { unconfirmed: [...this.queue] } : {}) };
  }

  /** Writes what is queued now and waits for it (each wait at most FINISH_WAIT); called in a non-cancellable scope when the run was cancelled. */
  async finish(): Promise<void> {
    this.finishing = true;
    // The write in flight settles first (cancelled with the run: its lines stay queued).
    const settled = await condition(() => !this.writing, FINISH_WAIT);
    this.cancelled = false;
    this.writeNext();
    if (!settled || !(await condition(() => this.queue.length === 0 && !this.writing, FINISH_WAIT))) {
      log.warn('TensorBoard did not take every point of the run in time', { batches: this.queue.length, runDir: this.runDir });
    }
  }

  private flushLater(): void {
    if (this.writing || this.flushPending || this.queue.length === 0) return;
    this.flushPending = true;
    void sleep(FLUSH_EVERY).then(
      () => {
        this.flushPending = false;
        this.writeNext();
      },
      // Cancelled with the run: finish() writes what is queued.
      () => void (this.flushPending = false),
    );
  }

  private writeNext(): void {
    if (this.writing || this.cancelled || this.queue.length === 0) return;
    const batches = this.queue.slice(0, MAX_BATCHES_PER_WRITE);
    this.writing = true;
    void this.activities
      .write({ runDir: this.runDir, batches })
      .then(
        () => void this.queue.splice(0, batches.length),
        (err: unknown) => {
          if (isCancellation(err)) {
            this.cancelled = true;
            return;
          }
          // Only a refusal no retry changes ends the retries: those points are dropped, training goes on.
          log.warn('TensorBoard refused a write', { error: String(err), batches: batches.length });
          this.queue.splice(0, batches.length);
        },
      )
      .then(() => {
        this.writing = false;
        if (this.finishing) this.writeNext();
        else this.flushLater();
      });
  }
}
