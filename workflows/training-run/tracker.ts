/**
 * tracking.mlflow: the run's MLflow run, fed from the workflow. Every metrics-file line the run
 * writes (Run.metrics) is also logged by an activity that training does not wait for: it is retried
 * with backoff while MLflow is down, and its points carry explicit steps and the workflow's time when
 * they were made, so a retried or replayed write leaves one point per metric and step. Batches not
 * yet confirmed go with the state into a continue-as-new and are written again there (idempotent);
 * at its end the run waits for them, at most FINISH_WAIT, then sets the run's status.
 */
import { condition, log, workflowInfo } from '@temporalio/workflow';
import type { TrackedLine } from '../../src/tracking/mlflow-batch';
import type { RunConfig } from '../../src/config/schema';
import type { MlflowRunRef, TrackingBatch } from '../../src/contracts/tracking';
import type { MlflowRunStatus } from '../../src/tracking/mlflow-run';
import { trackingProxies } from '../activity-proxies';
import { workflowNow } from '../clock';

/** How long a finished run waits for MLflow to take its last points and status before it returns anyway. */
export const FINISH_WAIT = '5m';

export class RunTracker {
  private readonly activities = trackingProxies();
  /** Batches sent and not yet confirmed, by a number of this execution. */
  private readonly unconfirmed = new Map<number, TrackingBatch>();
  private sent = 0;

  constructor(
    readonly run: MlflowRunRef,
    carried: TrackingBatch[] = [],
  ) {
    // Sent by an earlier execution and not confirmed there: written again (MLflow keeps them once).
    for (const batch of carried) this.send(batch);
  }

  /** The run's MLflow run for `cfg.tracking.mlflow`: found or made, with its parameters and tags (a refused tracker fails the run, naming the key). */
  static async open(mlflow: { uri: string; experiment: string }, config: RunConfig, continued: boolean, tags?: Array<{ key: string; value: string }>): Promise<RunTracker> {
    const info = workflowInfo();
    const run = await trackingProxies().open({ mlflow, workflowId: info.workflowId, namespace: info.namespace, startTime: workflowNow(), config, continued, ...(tags ? { tags } : {}) });
    return new RunTracker(run);
  }

  /** Logs the lines without waiting (their time: now, the workflow's). */
  log(lines: TrackedLine[]): void {
    if (lines.length > 0) this.send({ lines, timestamp: workflowNow() });
  }

  /** What a continue-as-new carries: the batches not yet confirmed. */
  carry(): TrackingBatch[] {
    return [...this.unconfirmed.values()];
  }

  /** Marks the run running again (a run resumed from its saved state may have been marked failed or killed). */
  running(): void {
    void this.activities.setTrackingStatus({ run: this.run, status: 'RUNNING' }).catch((err: unknown) => log.warn('MLflow status not set', { error: String(err) }));
  }

  /** Waits (at most FINISH_WAIT) for the points in flight, then sets the run's status and waits for that too. */
  async finish(status: MlflowRunStatus): Promise<void> {
    const drained = await condition(() => this.unconfirmed.size === 0, FINISH_WAIT);
    let statusSet = false;
    void this.activities
      .setTrackingStatus({ run: this.run, status, endTime: workflowNow() })
      .then(() => (statusSet = true))
      .catch((err: unknown) => log.warn('MLflow status not set', { error: String(err) }));
    await condition(() => statusSet, drained ? FINISH_WAIT : '1s');
    if (this.unconfirmed.size > 0 || !statusSet) {
      log.warn('MLflow did not take every point of the run in time', { batches: this.unconfirmed.size, statusSet, runId: this.run.runId });
    }
  }

  private send(batch: TrackingBatch): void {
    const id = this.sent++;
    this.unconfirmed.set(id, batch);
    void this.activities.logTracking({ run: this.run, lines: batch.lines as TrackedLine[], timestamp: batch.timestamp }).then(
      () => this.unconfirmed.delete(id),
      // Only a refusal no retry changes ends the retries: those points are not MLflow's to take.
      (err: unknown) => {
        this.unconfirmed.delete(id);
        log.warn('MLflow refused a batch of points', { error: String(err), lines: batch.lines.length });
      },
    );
  }
}
