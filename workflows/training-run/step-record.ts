/**
 * The record of one RL step, built once: its point (RlPoint: the state's and the result's curve, the
 * progress query's last step) and the metrics-file line read off that point.
 */
import type { TrainGrpoOutput } from '../../activities/training';
import type { RunConfig } from '../../src/config/schema';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import type { RlPoint, RlStepSchedule, StepRollouts } from '../../src/contracts/training-run';
import { horizonMetricKeys } from '../../src/horizon/metrics';
import type { MetricsLine } from '../../src/report/run-metrics';
import { idleShare, type RolloutInterval } from '../../src/rl/schedule';
import { sumCounts } from '../../src/timeline/counts';
import { mean } from '../web-ui-format';
import { stepCountsOf } from '../rollout-kinds';

/** Workflow times (ms) of one RL step: start, weights loaded into a remote server, rollout started, rollout done, trained. */
export interface StepTimes {
  t0: number;
  tSync: number;
  t1: number;
  t2: number;
  t3: number;
}

/** An asynchronous step's schedule as the loop knows it; the update and the times fill in the rest. */
export type StepScheduleIn = Omit<RlStepSchedule, 'staleness' | 'trainerIdle' | 'inferenceIdle'> & { intervals: RolloutInterval[] };

export interface StepRecordInput {
  cfg: RunConfig;
  rlStep: number;
  /** The weights version the step's rollout was generated with. */
  weightVersion: number;
  got: StepRollouts;
  samples: SampleSetRef[];
  update: TrainGrpoOutput;
  times: StepTimes;
  /** Whether a remote server was synced (the sync share of the step). */
  remote: boolean;
  /** Asynchronous RL only. */
  schedule?: StepScheduleIn;
}

export function stepRecord(s: StepRecordInput): { point: RlPoint; line: MetricsLine } {
  const { rollouts, keepGroups } = s.got;
  const { update, times: t } = s;
  const rows = rollouts.flatMap((r) => r.rows);
  const numbers = updateNumbers(update);
  const schedule = s.schedule && stepSchedule(s.schedule, update, t);
  const point: RlPoint = {
    step: s.rlStep,
    weightVersion: s.weightVersion,
    meanReward: mean(rows.map((r) => r.reward)),
    accuracy: rows.length === 0 ? 0 : rows.filter((r) => r.reward > 0).length / rows.length,
    ...(s.cfg.rl.dynamicSampling.enabled ? { rolloutBatches: rollouts.length, keptGroups: keepGroups.length } : {}),
    loss: update.loss,
    rows: update.rows,
    skipped: update.skipped,
    clipFraction: update.pgClipFrac,
    update: numbers,
    seconds: { publish: (t.t1 - t.t0) / 1000, rollout: (t.t2 - t.t1) / 1000, train: (t.t3 - t.t2) / 1000, ...(s.remote ? { sync: (t.t1 - t.tSync) / 1000 } : {}) },
    ...timelineCounts(s.samples),
    // The kind's own numbers (tree counts, success per horizon), from its row of the rollout table.
    ...stepCountsOf(s.cfg, rollouts),
    ...(schedule ? { schedule } : {}),
  };
  return { point, line: metricsLine(point, numbers) };
}

/** The update's numbers as the point keeps them, as the trainer reports them. */
function updateNumbers(update: TrainGrpoOutput) {
  return {
    pgClipFrac: update.pgClipFrac,
    pgClipFracLower: update.pgClipFracLower,
    approxKl: update.approxKl,
    entropy: update.entropy,
    gradNorm: update.gradNorm,
    tokens: update.tokens,
    meanResponseLength: update.meanResponseLength,
    optimizerSteps: update.optimizerSteps,
    tokensRun: update.tokensRun,
    // Absent from updates recorded before it was counted.
    ...(update.paddedTokensRun !== undefined ? { paddedTokensRun: update.paddedTokensRun } : {}),
    updateSeconds: update.updateSeconds,
    ...(update.klLoss !== undefined ? { klLoss: update.klLoss } : {}),
  };
}

/** The point's line of the metrics file (src/report/run-metrics.ts names its fields). */
function metricsLine(point: RlPoint, update: ReturnType<typeof updateNumbers>): MetricsLine {
  return {
    kind: 'rl',
    step: point.step,
    meanReward: point.meanReward,
    accuracy: point.accuracy,
    loss: point.loss,
    clipFrac: update.pgClipFrac,
    approxKl: update.approxKl,
    entropy: update.entropy,
    gradNorm: update.gradNorm,
    responseLength: update.meanResponseLength,
    tokensTrained: update.tokens,
    rows: point.rows,
    skipped: point.skipped,
    ...(point.timelines ? { timelines: point.timelines } : {}),
    ...(point.tree ? { tree: point.tree } : {}),
    ...(point.horizon ? { horizon: horizonMetricKeys(point.horizon) } : {}),
    seconds: point.seconds,
    ...(point.schedule ? { schedule: point.schedule } : {}),
  };
}

/** An asynchronous step's staleness, drops and idle shares. */
function stepSchedule(s: StepScheduleIn, update: TrainGrpoOutput, t: StepTimes): RlStepSchedule {
  return {
    maxStaleness: s.maxStaleness,
    staleness: update.staleness ?? {},
    droppedStale: s.droppedStale,
    ...(update.partialSamples ? { partial: update.partialSamples } : {}),
    trainerIdle: (t.t2 - t.t1) / Math.max(1, t.t3 - t.t0),
    inferenceIdle: idleShare(s.intervals, t.t0, t.t3),
    ...(update.offPolicyCapped !== undefined ? { capped: update.offPolicyCapped, meanWeight: update.offPolicyMeanWeight! } : {}),
  };
}

/** The step's timeline counts, summed over its sample sets (absent when they were not merged). */
function timelineCounts(sets: SampleSetRef[]): Pick<RlPoint, 'timelines'> {
  const timelines = sumCounts(sets.flatMap((s) => (s.timelines ? [s.timelines] : [])));
  return timelines ? { timelines } : {};
}
