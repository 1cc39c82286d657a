/**
 * What crosses layers for experiment tracking (tracking.mlflow): the run's MLflow run, and the batches
 * of points a continue-as-new carries because MLflow had not confirmed them yet.
 */

/** One MLflow run: the server, its experiment and the run's id. */
export interface MlflowRunRef {
  uri: string;
  experimentId: string;
  runId: string;
}

/**
 * Metrics-file lines (src/report/run-metrics.ts MetricsLine; typed loosely here, which the report
 * module's own imports of contracts require) and the workflow time they were made.
 */
export interface TrackingBatch {
  lines: object[];
  timestamp: number;
}

/** The tracker's part of the run state. */
export interface RunTrackingState {
  mlflow: MlflowRunRef;
  /** Sent and not confirmed when the execution continued as new: written again by the next. */
  unconfirmed?: TrackingBatch[];
}

/** The compare.* baselines that get an MLflow run of their own, a child of the main run's. */
export type TrackedBaseline = 'moreSft' | 'filteredSft' | 'rft';

/** A baseline's child run as the workflow asks for it: its name (the baseline's run key) and the settings that are its parameters. */
export interface ChildRunInput {
  parent: MlflowRunRef;
  baseline: TrackedBaseline;
  name: string;
  /** Workflow time the child was opened (ms). */
  startTime: number;
  /** Flattened into its parameters (the config's parts the baseline trains with). */
  settings: Record<string, unknown>;
}

/** tracking.tensorboard's part of a run's or job's state: the run's folder, and the batches not yet written when the execution continued as new. */
export interface TensorboardState {
  runDir: string;
  unconfirmed?: TrackingBatch[];
}
