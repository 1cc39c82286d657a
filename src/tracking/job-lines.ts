/**
 * What a planActJob logs to its trackers (tracking.mlflow, tracking.tensorboard): one run per job,
 * its rollouts as steps (the count of rollouts done, 1, 2, ...: the session's rollout id is a value,
 * since a job takes its ids in the order given), and its own evaluations at the count they followed.
 * Lines like the metrics file's (src/report/run-metrics.ts), turned into points the same way
 * (mlflow-batch.ts): rollout/meanReward, train/loss, eval/job/plannerAccuracy, ...
 */
import type { JobEvalPoint, JobRolloutResult } from '../contracts/plan-act-job';

export type JobMetricsLine =
  | {
      kind: 'rollout';
      step: number;
      rolloutId: number;
      meanReward: number;
      episodes: number;
      /** 1 when the joint rollout could not happen and the job played a single-agent one. */
      fellBack: number;
      /** The weights version the job played the rollout with (jobs that train). */
      weightVersion?: number;
    }
  | { kind: 'train'; step: number; loss: number; rows: number; clipFraction: number; checkpointStep: number; weightVersion: number }
  | ({ kind: 'eval'; phase: 'job'; step: number } & Omit<JobEvalPoint, 'afterRollouts'>);

/** The lines of the job's `step`-th rollout (1 = its first): the rollout, and the update trained on it if any. */
export function jobRolloutLines(step: number, r: JobRolloutResult): JobMetricsLine[] {
  const rollout: JobMetricsLine = {
    kind: 'rollout',
    step,
    rolloutId: r.rolloutId,
    meanReward: r.meanReward,
    episodes: r.episodes,
    fellBack: r.outcome === 'fell-back' ? 1 : 0,
    ...(r.weightVersion !== undefined ? { weightVersion: r.weightVersion } : {}),
  };
  const t = r.training;
  return t ? [rollout, { kind: 'train', step, loss: t.loss, rows: t.rows, clipFraction: t.clipFraction, checkpointStep: t.step, weightVersion: t.weightVersion }] : [rollout];
}

/** A job's evaluation of its own weights, at the count of rollouts it had trained on. */
export function jobEvalLine(e: JobEvalPoint): JobMetricsLine {
  const { afterRollouts, ...rest } = e;
  return { kind: 'eval', phase: 'job', step: afterRollouts, ...rest };
}
