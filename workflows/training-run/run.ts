/**
 * One trainingRun execution: its config, activities and state, and the bookkeeping every phase
 * shares (progress, saves, metrics lines, the published weights, continue-as-new). The phases
 * (start, sft, rl-loop, baselines-and-test, result) read and advance it in order.
 */
import { continueAsNew, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunConfig, RunConfigInput } from '../../src/config/schema';
import type { RemoteEngineRef } from '../../src/domain/types';
import type { MetricsLine } from '../../src/report/run-metrics';
import type { CheckpointInfo, WeightsInfo } from '../../src/contracts/weights';
import type { RlEvalPoint, RlPoint, RunProgress, RunState, TrainingRunResult, TrainingRunResume } from '../../src/contracts/training-run';
import { activityProxies } from '../activity-proxies';
import { EXPERIMENT, STEP } from '../search-attributes';
import { progressQuery } from '../messages';
import type { RunTracker } from './tracker';
import type { TensorboardLog } from '../tensorboard-log';

/** Points of each curve the workflow state and result keep (the metrics file keeps every one). */
const KEEP_POINTS = 50;

/** inference.engine openai with weightSync: the server rollouts generate on, given every step's weights. */
export interface RemotePolicy {
  ref: RemoteEngineRef;
  dir: string;
}

/** trainingRun's signature, for continue-as-new (the workflow type stays the running one's). */
type TrainingRunWorkflow = (input: RunConfigInput, resume?: TrainingRunResume) => Promise<TrainingRunResult>;

export class Run {
  readonly data;
  readonly training;
  readonly inference;
  readonly records;
  readonly rlSteps: number;
  readonly rlPoints: RlPoint[];
  readonly rlEvals: RlEvalPoint[];
  readonly progress: RunProgress;
  /** tracking.mlflow: logs every metrics line too (set by the start phase). */
  tracker?: RunTracker;
  /** tracking.tensorboard: writes every metrics line to the run's event file too (set by the start phase). */
  tensorboard?: TensorboardLog;
  /** Chunks and steps this execution ran (workflow.continueAsNewEvery counts them). */
  private unitsThisExecution = 0;

  constructor(
    readonly cfg: RunConfig,
    readonly runId: string,
    readonly state: RunState,
    readonly remote: RemotePolicy | undefined,
  ) {
    ({ data: this.data, training: this.training, inference: this.inference, records: this.records } = activityProxies(cfg.timeouts, cfg.trainer));
    this.rlSteps = cfg.rl.steps;
    this.rlPoints = state.rl ??= [];
    this.rlEvals = state.rlEvals ??= [];
    const rlPoints = this.rlPoints;
    this.progress = {
      phase: 'prepare',
      step: state.checkpoint?.step ?? 0,
      totalSteps: cfg.sft.steps + this.rlSteps,
      weightVersion: state.weights?.version ?? 0,
      lastLoss: state.losses.at(-1)?.loss,
      lastEval: state.evals.at(-1),
      ...(rlPoints.length > 0 ? { rlStep: this.rlDone(), lastReward: rlPoints.at(-1)!.meanReward, lastAccuracy: rlPoints.at(-1)!.accuracy } : {}),
      ...(this.rlEvals.length > 0 ? { lastRlEval: this.rlEvals.at(-1) } : {}),
    };
  }

  /** Answers the progress query and tags the run with its experiment and step. */
  showProgress(): void {
    setHandler(progressQuery, () => this.progress);
    upsertSearchAttributes([{ key: EXPERIMENT, value: this.cfg.experiment }, { key: STEP, value: this.progress.step }]);
  }

  /** The run's latest checkpoint (set by the start phase, advanced by every SFT chunk and RL step). */
  get checkpoint(): CheckpointInfo {
    return this.state.checkpoint!;
  }

  /** RL steps finished: the point list is cut to its last few across continue-as-new. */
  rlDone(): number {
    return this.state.rlDone ?? this.rlPoints.length;
  }

  save(): Promise<void> {
    trimState(this.state);
    return this.records.saveRunState({ runId: this.runId, state: this.state });
  }

  metrics(lines: MetricsLine[]): Promise<string> {
    // Not waited for: the tracker retries while training goes on.
    this.tracker?.log(lines);
    this.tensorboard?.log(lines);
    return this.records.appendMetrics({ runId: this.runId, lines });
  }

  /**
   * Histories stay bounded: a new execution when Temporal suggests it or every
   * workflow.continueAsNewEvery chunks/steps, carrying the state, whose point lists are cut to their
   * last few (the metrics file has all). Whether the next maybeContinueAsNew will (it counts this unit):
   */
  continueAsNewDue(): boolean {
    const every = this.cfg.workflow.continueAsNewEvery;
    return workflowInfo().continueAsNewSuggested || (every > 0 && this.unitsThisExecution + 1 >= every);
  }

  async maybeContinueAsNew(): Promise<void> {
    const due = this.continueAsNewDue();
    this.unitsThisExecution++;
    if (due) {
      trimState(this.state);
      if (this.tracker) this.state.tracking = { mlflow: this.tracker.run, unconfirmed: this.tracker.carry() };
      if (this.tensorboard) this.state.tensorboard = this.tensorboard.state();
      await continueAsNew<TrainingRunWorkflow>(this.cfg, this.state);
    }
  }

  /** The latest checkpoint's weights; weights already published for it are reused (an eval and the next rollout share a version). */
  async publish(): Promise<WeightsInfo> {
    const { state, checkpoint } = this;
    if (state.weights && state.weights.step === checkpoint.step) return state.weights;
    const version = (state.weights?.version ?? -1) + 1;
    const weights: WeightsInfo = await this.training.publishWeights({ runId: this.runId, checkpoint, version });
    state.weights = weights;
    this.progress.weightVersion = version;
    return weights;
  }
}

/**
 * Cuts each point list of the state to its last KEEP_POINTS, in place (the arrays are shared with
 * the running code). The first RL evaluation stays: it is the "SFT only" side of the comparison.
 * The state travels in every save and continue-as-new, so this keeps the history bounded.
 */
export function trimState(state: RunState): void {
  const cut = <T>(xs: T[] | undefined, keepFirst = false): void => {
    if (!xs || xs.length <= KEEP_POINTS) return;
    xs.splice(keepFirst ? 1 : 0, xs.length - KEEP_POINTS);
  };
  cut(state.losses);
  cut(state.evals);
  cut(state.rl);
  cut(state.rlEvals, true);
}
