/**
 * tracking.mlflow: the run's MLflow run, fed from the workflow. Every metrics-file line the run
 * writes (Run.metrics) is also logged by an activity that training does not wait for: it is retried
 * with backoff while MLflow is down, and its points carry explicit steps and the workflow's time when
 * they were made, so a retried or replayed write leaves one point per metric and step. Batches not
 * yet confirmed go with the state into a continue-as-new and are written again there (idempotent);
 * at its end the run waits for them, at most FINISH_WAIT, then sets the run's status.
 * The compare.* baselines log into child runs of their own (MLflow's mlflow.parentRunId), opened
 * on their first lines; the finished run uploads its artifacts (curves, comparison, policy). Neither
 * happens in an execution that continues as new (the baselines phase and the end never do), so
 * neither is carried.
 */
import { condition, log, patched, workflowInfo } from '@temporalio/workflow';
import type { MetricsLine } from '../../src/report/run-metrics';
import type { TrackedLine } from '../../src/tracking/mlflow-batch';
import type { RunConfig } from '../../src/config/schema';
import type { BlobRef } from '../../src/domain/types';
import type { MlflowRunRef, TrackedBaseline, TrackingBatch } from '../../src/contracts/tracking';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { MlflowRunStatus } from '../../src/tracking/mlflow-run';
import { trackingProxies } from '../activity-proxies';
import { workflowNow } from '../clock';

/** Baselines as child runs, and the run's artifacts: commands runs recorded before them never sent. */
export const MLFLOW_CHILD_RUNS = 'mlflow-child-runs';
export const MLFLOW_ARTIFACTS = 'mlflow-artifacts';

/** A baseline's child run as the baselines phase logs to it. */
export interface BaselineRun {
  log(lines: MetricsLine[]): void;
  /** The baseline is done: its run is marked FINISHED (its test evaluation may still come). */
  end(): void;
}

/** How long a finished run waits for MLflow to take its last points and status before it returns anyway. */
export const FINISH_WAIT = '5m';

export class RunTracker {
  private readonly activities = trackingProxies();
  /** Batches sent and not yet confirmed, by a number of this execution. */
  private readonly unconfirmed = new Map<number, TrackingBatch>();
  private sent = 0;
  /** Child runs opened in this execution (their refs once MLflow made them), and those ended. */
  private readonly children = new Map<TrackedBaseline, Promise<MlflowRunRef>>();
  private readonly ended = new Set<TrackedBaseline>();
  /** Writes in flight that no continue-as-new carries (child runs, artifacts): the end waits for them too. */
  private inFlight = 0;

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

  /**
   * A baseline's own run, a child of this one, opened (found or made, without waiting) on the first
   * call in this execution; `settings` become its parameters. Undefined in runs recorded before child runs.
   */
  baseline(baseline: TrackedBaseline, name: string, settings: Record<string, unknown>): BaselineRun | undefined {
    if (!patched(MLFLOW_CHILD_RUNS)) return undefined;
    let child = this.children.get(baseline);
    if (!child) {
      child = this.activities.openChildRun({ parent: this.run, baseline, name, startTime: workflowNow(), settings });
      this.children.set(baseline, child);
    }
    const opened = child;
    return {
      log: (lines) => {
        if (lines.length === 0) return;
        const timestamp = workflowNow();
        this.background('MLflow refused a baseline\'s points', opened.then((run) => this.activities.logTracking({ run, lines, timestamp })));
      },
      end: () => {
        this.ended.add(baseline);
        this.background('MLflow status not set', this.endChild(opened, 'FINISHED'));
      },
    };
  }

  /**
   * Uploads the finished run's artifacts without waiting: the curves picture (from the blob store),
   * the comparison (Markdown and JSON) and where the policy is. Nothing in runs recorded before them.
   */
  artifacts(result: TrainingRunResult, curvesPng: BlobRef | undefined): void {
    if (!patched(MLFLOW_ARTIFACTS)) return;
    const { comparison, checkpoint, weights } = result;
    const input = { run: this.run, workflowId: workflowInfo().workflowId, ...(checkpoint ? { checkpoint } : {}), ...(comparison ? { comparison } : {}), ...(weights ? { weights } : {}), ...(curvesPng ? { curvesPng } : {}) };
    this.background('MLflow did not take the run\'s artifacts', this.activities.logArtifacts(input));
  }

  /** Waits (at most FINISH_WAIT) for the points in flight, then sets the run's status and waits for that too. */
  async finish(status: MlflowRunStatus): Promise<void> {
    const drained = await condition(() => this.unconfirmed.size === 0 && this.inFlight === 0, FINISH_WAIT);
    // Baselines cut short end with the run.
    for (const [baseline, child] of this.children) if (!this.ended.has(baseline)) this.background('MLflow status not set', this.endChild(child, status));
    let statusSet = false;
    void this.activities
      .setTrackingStatus({ run: this.run, status, endTime: workflowNow() })
      .then(() => (statusSet = true))
      .catch((err: unknown) => log.warn('MLflow status not set', { error: String(err) }));
    await condition(() => statusSet && this.inFlight === 0, drained ? FINISH_WAIT : '1s');
    if (this.unconfirmed.size > 0 || !statusSet || this.inFlight > 0) {
      log.warn('MLflow did not take every point of the run in time', { batches: this.unconfirmed.size, statusSet, inFlight: this.inFlight, runId: this.run.runId });
    }
  }

  private endChild(child: Promise<MlflowRunRef>, status: MlflowRunStatus): Promise<void> {
    const endTime = workflowNow();
    return child.then((run) => this.activities.setTrackingStatus({ run, status, endTime }));
  }

  /** A write training does not wait for; the end does (inFlight), and a refusal is logged. */
  private background(refused: string, write: Promise<unknown>): void {
    this.inFlight++;
    void write.then(
      () => this.inFlight--,
      (err: unknown) => {
        this.inFlight--;
        log.warn(refused, { error: String(err) });
      },
    );
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
