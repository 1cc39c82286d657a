/**
 * A planActJob's trackers (tracking.mlflow, tracking.tensorboard): one MLflow run and one TensorBoard
 * run per job (its workflow id; a dual-mode pair is two, tagged with their roles), its rollouts as
 * steps (src/tracking/job-lines.ts). The same code as trainingRun's: the MLflow run is
 * training-run/tracker.ts's RunTracker, the event file tensorboard-log.ts's, each opened before the
 * job does anything (a tracker that cannot be used refuses the job, naming the key), written without
 * training waiting, carried across continue-as-new, and waited for (bounded) at the end.
 */
import { patched } from '@temporalio/workflow';
import type { RunConfig } from '../../src/config/schema';
import type { JobRole } from '../../src/contracts/plan-act-job';
import type { RunTrackingState, TensorboardState } from '../../src/contracts/tracking';
import type { TrackedLine } from '../../src/tracking/mlflow-batch';
import type { MlflowRunStatus } from '../../src/tracking/mlflow-run';
import { failAsRun } from '../failures';
import { TensorboardLog } from '../tensorboard-log';
import { RunTracker } from '../training-run/tracker';

/** What a continue-as-new carries of the job's trackers. */
export interface JobTrackingCarry {
  mlflow?: RunTrackingState;
  tensorboard?: TensorboardState;
}

export class JobTrackers {
  private constructor(
    private readonly mlflow?: RunTracker,
    private readonly tensorboard?: TensorboardLog,
  ) {}

  /** The job's trackers: opened (a new job) or taken over from the carry (a continue-as-new); none without tracking. */
  static async start(cfg: RunConfig, role: JobRole, carry: JobTrackingCarry | undefined): Promise<JobTrackers | undefined> {
    // Jobs recorded before jobs could log (tracking was refused) never get here with the key.
    if (!cfg.tracking || !patched('plan-act-job-tracking')) return undefined;
    const { mlflow, tensorboard } = cfg.tracking;
    const tags = [
      { key: 'durable-rl.workflow', value: 'planActJob' },
      { key: 'durable-rl.role', value: role },
    ];
    const mlflowRun = carry?.mlflow
      ? new RunTracker(carry.mlflow.mlflow, carry.mlflow.unconfirmed)
      : mlflow
        ? await failAsRun(RunTracker.open(mlflow, cfg, false, tags))
        : undefined;
    const tensorboardRun = carry?.tensorboard
      ? new TensorboardLog(carry.tensorboard.runDir, carry.tensorboard.unconfirmed)
      : tensorboard
        ? await failAsRun(TensorboardLog.open(tensorboard.dir, false))
        : undefined;
    return new JobTrackers(mlflowRun, tensorboardRun);
  }

  /** Logs the lines to each tracker without waiting. */
  log(lines: TrackedLine[]): void {
    this.mlflow?.log(lines);
    this.tensorboard?.log(lines);
  }

  carry(): JobTrackingCarry {
    return {
      ...(this.mlflow ? { mlflow: { mlflow: this.mlflow.run, unconfirmed: this.mlflow.carry() } } : {}),
      ...(this.tensorboard ? { tensorboard: this.tensorboard.state() } : {}),
    };
  }

  /** Waits (bounded) for what is in flight, and sets the MLflow run's status. */
  async finish(status: MlflowRunStatus): Promise<void> {
    await this.mlflow?.finish(status);
    await this.tensorboard?.finish();
  }
}
