/**
 * trainingRun: the main job.
 *  1. SFT: prepare the demonstrations, fit the embedded policy in checkpointed chunks (or start from
 *     an earlier run's checkpoint, init.fromRun), evaluating on held-out SFT problems.
 *  2. RL (rl.steps > 0): per step publish the weights, run a shared-mode Plan/Act rollout on the RL
 *     distribution as a child workflow, and train GRPO on its samples; evaluate on held-out RL
 *     problems (greedy and sampled) at the start, every eval.rlEverySteps and at the end.
 *  3. compare.moreSft: the baseline a skeptic asks for, the checkpoint RL started from given RL's
 *     wall time of further SFT on the same demonstrations, evaluated the same way.
 *  4. The metrics file and the curves picture.
 * Every SFT chunk and RL step saves the run state, so a terminated run resumes where it was
 * (`bash scripts/main.sh --resume <workflow id>`); long runs continue-as-new with their state.
 */
import {
  continueAsNew,
  log,
  patched,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunConfig, RunConfigInput } from '../src/config/schema';
import type { RemoteEngineRef } from '../src/domain/types';
import { ConfigError } from '../src/config/errors';
import type { MetricsLine } from '../src/report/run-metrics';
import { fingerprint } from '../src/domain/rng';
import { activityProxies } from './activity-proxies';
import { configFailure, resolveConfigOrFail } from './parse-config';
import { failAsRun } from './failures';
import { mean, workflowNow } from './common';
import { nextDynamicSample } from '../src/rl/dynamic-sampling';
import { idleShare, stepsToLaunch, type RolloutInterval } from '../src/rl/schedule';
import { ROLLOUT_KINDS, type RlEvaluation } from './rollout-kinds';
import { grpoUpdate } from './policy-update';
import { baselineRefusal, FILTERED_SFT_SUFFIX, MORE_SFT_SUFFIX, SFT_ONLY_SUFFIX, rftBaseline, sftBaseline, type RlSpent } from './baselines';
import { horizonMetricKeys, type HorizonSuccess } from '../src/horizon/metrics';
import { trainingRunV1 } from './training-run-v1';
import type { RolloutSummary, SampleSetRef } from '../src/contracts/plan-act';
import type { PolicyRef } from '../src/contracts/weights';
import { sumCounts } from '../src/timeline/counts';
import { EXPERIMENT, STEP } from './search-attributes';
import { progressQuery } from './shared';
import type { ComparedPolicy, ComparedResult, Comparison, EvalPoint, RlEvalPoint, RlPoint, RlStepSchedule, RunProgress, RunState, StepRollouts, TrainingRunResult, TrainingRunResume } from '../src/contracts/training-run';

/** Workflow times (ms) of one RL step: start, weights loaded into a remote server, rollout started, rollout done. */
interface StepTimes {
  t0: number;
  tSync: number;
  t1: number;
  t2: number;
}
import type { WeightsInfo } from '../src/contracts/weights';

/** Points of each curve the workflow state and result keep (the metrics file keeps every one). */
const KEEP_POINTS = 50;

/**
 * Cuts each point list of the state to its last KEEP_POINTS, in place (the arrays are shared with
 * the running code). The first RL evaluation stays: it is the "SFT only" side of the comparison.
 * The state travels in every save and continue-as-new, so this keeps the history bounded.
 */
function trimState(state: RunState): void {
  const cut = <T>(xs: T[] | undefined, keepFirst = false): void => {
    if (!xs || xs.length <= KEEP_POINTS) return;
    xs.splice(keepFirst ? 1 : 0, xs.length - KEEP_POINTS);
  };
  cut(state.losses);
  cut(state.evals);
  cut(state.rl);
  cut(state.rlEvals, true);
}

export async function trainingRun(input: RunConfigInput, resume?: TrainingRunResume): Promise<TrainingRunResult> {
  // Runs started before this code keep the commands they were recorded with.
  if (!patched('training-run-v2')) return trainingRunV1(input, resume as RunState | undefined);
  // A later execution (continue-as-new, --resume) carries the config its start accepted.
  const cfg = await resolveConfigOrFail(input, 'workflow input', { consumer: { workflow: 'trainingRun' }, ...(resume ? { continued: true } : {}) });
  if (cfg.rollout.mode === 'dual') {
    const message = 'trainingRun trains one shared policy; dual mode runs as two planActJob workflows (docs/plan-act.md)';
    throw configFailure(new ConfigError('workflow input', [{ path: 'rollout.mode', message }]));
  }
  const remote = remotePolicy(cfg);
  const refusal = ROLLOUT_KINDS[cfg.rollout.kind].check?.(cfg) ?? baselineRefusal(cfg);
  if (refusal) throw configFailure(new ConfigError('workflow input', [refusal]));
  const { data, training, inference, records } = activityProxies(cfg.timeouts, cfg.trainer);
  const runId = workflowInfo().workflowId;
  // A resume must run the config the state was made with.
  const configHash = fingerprint(cfg);
  // Blobs are named after the workflow id; a run claims the id for its config first (a re-run of the
  // same config shares them on purpose: finished chunks and steps are reused, not redone).
  if (!resume || 'fromSavedState' in resume) await failAsRun(records.claimRunId({ runId, configHash }));
  const state: RunState =
    resume && 'fromSavedState' in resume ? await failAsRun(records.loadRunState({ runId })) : (resume ?? { losses: [], evals: [] });
  const rlSteps = cfg.rl.steps;
  const rlPoints: RlPoint[] = (state.rl ??= []);
  const rlEvals: RlEvalPoint[] = (state.rlEvals ??= []);
  // RL steps finished: the point list is cut to its last few across continue-as-new.
  const rlDone = (): number => state.rlDone ?? rlPoints.length;
  const progress: RunProgress = {
    phase: 'prepare',
    step: state.checkpoint?.step ?? 0,
    totalSteps: cfg.sft.steps + rlSteps,
    weightVersion: state.weights?.version ?? 0,
    lastLoss: state.losses.at(-1)?.loss,
    lastEval: state.evals.at(-1),
    ...(rlPoints.length > 0 ? { rlStep: rlDone(), lastReward: rlPoints.at(-1)!.meanReward, lastAccuracy: rlPoints.at(-1)!.accuracy } : {}),
    ...(rlEvals.length > 0 ? { lastRlEval: rlEvals.at(-1) } : {}),
  };
  setHandler(progressQuery, () => progress);
  upsertSearchAttributes([{ key: EXPERIMENT, value: cfg.experiment }, { key: STEP, value: progress.step }]);

  const save = () => {
    trimState(state);
    return records.saveRunState({ runId, state });
  };
  // Histories stay bounded: a new execution when Temporal suggests it or every workflow.continueAsNewEvery
  // chunks/steps, carrying the state, whose point lists are cut to their last few (the metrics file has all).
  let unitsThisExecution = 0;
  // Whether the next maybeContinueAsNew will continue as new (it counts this unit).
  const continueAsNewDue = (): boolean => {
    const every = cfg.workflow.continueAsNewEvery;
    return workflowInfo().continueAsNewSuggested || (every > 0 && unitsThisExecution + 1 >= every);
  };
  const maybeContinueAsNew = async (): Promise<void> => {
    const due = continueAsNewDue();
    unitsThisExecution++;
    if (due) {
      trimState(state);
      await continueAsNew<typeof trainingRun>(cfg, state);
    }
  };
  const metrics = (lines: MetricsLine[]) => records.appendMetrics({ runId, lines });

  const dataset =
    state.dataset ??
    (await data.prepareSftDataset({ runId, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq, ...(cfg.horizon ? { horizon: cfg.horizon } : {}) })).ref;
  state.dataset = dataset;
  let backend = 'resumed';
  if (!state.checkpoint) {
    if (cfg.init.fromRun !== undefined) {
      state.checkpoint = await failAsRun(training.checkpointFromRun({
        runId,
        fromRun: cfg.init.fromRun,
        ...(cfg.init.step !== undefined ? { step: cfg.init.step } : {}),
        model: cfg.model,
      }));
      backend = `from run ${cfg.init.fromRun}`;
    } else if (cfg.init.fromHf !== undefined) {
      state.checkpoint = await failAsRun(training.checkpointFromHf({ runId, dir: cfg.init.fromHf, model: cfg.model }));
      backend = `from ${cfg.init.fromHf}`;
    } else {
      const init = await training.initPolicy({ runId, model: cfg.model, seed: cfg.seed });
      state.checkpoint = init.checkpoint;
      backend = init.backend;
    }
  }
  let checkpoint = state.checkpoint;
  // A run started from another run's checkpoint (init.fromRun) counts on from that checkpoint's step.
  progress.totalSteps = (state.rlStart?.step ?? Math.max(cfg.sft.steps, checkpoint.step)) + rlSteps;

  // Weights already published for this checkpoint are reused: an eval and the next rollout share a version.
  const publish = async (): Promise<WeightsInfo> => {
    if (state.weights && state.weights.step === checkpoint.step) return state.weights;
    const version = (state.weights?.version ?? -1) + 1;
    const weights: WeightsInfo = await training.publishWeights({ runId, checkpoint, version });
    state.weights = weights;
    progress.weightVersion = version;
    return weights;
  };

  const evaluate = async (): Promise<EvalPoint> => {
    progress.phase = 'eval';
    const weights = await publish();
    const report = await inference.evaluatePolicy({
      runId,
      weights,
      task: cfg.task,
      rollout: cfg.rollout,
      seed: cfg.seed,
      maxNewTokens: cfg.eval.maxNewTokens,
      ...(cfg.horizon ? { horizon: cfg.horizon } : {}),
    });
    const point: EvalPoint = { ...report, step: checkpoint.step, weightVersion: weights.version };
    state.evals.push(point);
    progress.lastEval = point;
    // The SFT curve's points; the check after RL (SFT distribution, after RL's steps) is in the result only.
    if (rlDone() === 0) await metrics([{ kind: 'eval', phase: 'sft', step: point.step, greedyAccuracy: point.episodeAccuracy, ...horizonRates(point.byHorizon) }]);
    log.info('evaluation', { step: point.step, planner: point.plannerAccuracy, actor: point.actorAccuracy, episode: point.episodeAccuracy });
    return point;
  };

  /** Held-out accuracy on the RL distribution, greedy and sampled, of the given weights. */
  /** Held-out accuracy on the RL distribution, greedy and sampled, of the given weights (the kind's own evaluation). */
  const evaluateRl = (weights: WeightsInfo): Promise<RlEvaluation> => ROLLOUT_KINDS[cfg.rollout.kind].evaluate(cfg, weights);

  const rlEvaluate = async (rlStep: number): Promise<RlEvalPoint> => {
    progress.phase = 'eval';
    const weights = await publish();
    const point: RlEvalPoint = { step: rlStep, weightVersion: weights.version, ...(await evaluateRl(weights)) };
    rlEvals.push(point);
    progress.lastRlEval = point;
    await metrics([
      { kind: 'eval', phase: 'rl', step: rlStep, greedyAccuracy: point.greedy.accuracy, ...(point.sampled ? { sampledAccuracy: point.sampled.accuracy } : {}), ...horizonRates(point.byHorizon) },
    ]);
    log.info('rl evaluation', { rlStep, greedy: point.greedy.accuracy, sampled: point.sampled?.accuracy });
    return point;
  };

  // ---- SFT ----
  if (cfg.eval.everySteps > 0 && state.evals.length === 0 && checkpoint.step === 0 && cfg.sft.steps > 0) await evaluate();

  while (checkpoint.step < cfg.sft.steps) {
    progress.phase = 'sft';
    const toStep = Math.min(cfg.sft.steps, checkpoint.step + cfg.sft.stepsPerActivity);
    const chunk = await training.trainSft({ runId, checkpoint, dataset, toStep, sft: cfg.sft, seed: cfg.seed });
    checkpoint = state.checkpoint = chunk.checkpoint;
    state.losses.push(...chunk.losses);
    Object.assign(progress, { phase: 'sft', step: checkpoint.step, lastLoss: chunk.losses.at(-1)?.loss });
    upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
    await metrics(chunk.losses.map((l): MetricsLine => ({ kind: 'sft-loss', step: l.step, loss: l.loss })));
    log.info('sft chunk', { step: checkpoint.step, loss: progress.lastLoss, tokensPerSec: chunk.tokensPerSec });

    const evalDue = cfg.eval.everySteps > 0 && Math.floor(toStep / cfg.eval.everySteps) > Math.floor((toStep - chunk.losses.length) / cfg.eval.everySteps);
    if (evalDue && checkpoint.step < cfg.sft.steps) await evaluate();
    await save();
    await maybeContinueAsNew();
  }

  const lastEvalHere = () => (state.evals.length > 0 && state.evals.at(-1)!.step === checkpoint.step ? state.evals.at(-1) : undefined);
  // A run resumed inside its RL phase already evaluated the end of SFT.
  if (rlDone() === 0 && !lastEvalHere() && (cfg.sft.steps > 0 || rlSteps === 0)) await evaluate();

  // ---- RL ----
  // The weight version the remote server was last given in this execution (a resumed or continued
  // run syncs again: the server may have restarted meanwhile).
  let syncedVersion: number | undefined;
  if (rlSteps > 0) {
    if (!state.rlStart) {
      state.rlStart = checkpoint;
      // Counted from RL's first step only (a run that began RL on older code reports none).
      state.rlTrainedTokens = 0;
    }
    if (rlEvals.length === 0) await rlEvaluate(0);
  }
  const kind = ROLLOUT_KINDS[cfg.rollout.kind];
  const maxStaleness = cfg.rl.async?.maxStaleness ?? 0;

  /** The newest weights as a rollout's policy, loaded into the remote server first when there is one. */
  const rolloutPolicy = async (): Promise<{ policy: PolicyRef; tSync: number }> => {
    const policy: PolicyRef = { weights: await publish(), ...(remote ? { remote: remote.ref } : {}) };
    const tSync = workflowNow();
    // A remote server gets the step's weights before its rollout (checked by logprobs there).
    if (remote && syncedVersion !== policy.weights.version) {
      await failAsRun(inference.syncRemoteWeights({ runId, weights: policy.weights, checkpoint, remote: remote.ref, dir: remote.dir }));
      syncedVersion = policy.weights.version;
    }
    return { policy, tSync };
  };

  /**
   * One step's rollout: one batch, or with dynamic sampling as many as it takes to fill the step with
   * groups that have reward spread (src/rl/dynamic-sampling.ts).
   */
  const runRollouts = async (rlStep: number, policy: PolicyRef): Promise<StepRollouts> => {
    const dynamic = cfg.rl.dynamicSampling;
    const rollouts: RolloutSummary[] = [];
    let keepGroups: string[] = [];
    for (let batch = 0; ; batch++) {
      rollouts.push(await kind.run({ runId, rlStep, batch, config: cfg, policy }));
      if (!kind.batches) break;
      if (!dynamic.enabled) break;
      const next = nextDynamicSample(keepGroups, rollouts.at(-1)!.rows, { wanted: cfg.rl.promptsPerStep, batchesRun: batch + 1, maxBatches: dynamic.maxBatchesPerStep });
      keepGroups = next.kept;
      if (!next.more) break;
    }
    return { rollouts, keepGroups };
  };

  /** Trains step rlStep on its rollout and records the step: its point, metrics and progress. */
  const trainStep = async (rlStep: number, policy: PolicyRef, got: StepRollouts, t: StepTimes, schedule?: Omit<RlStepSchedule, 'staleness' | 'trainerIdle' | 'inferenceIdle'> & { intervals: RolloutInterval[] }): Promise<void> => {
    const { rollouts, keepGroups } = got;
    const dynamic = cfg.rl.dynamicSampling;
    const rows = rollouts.flatMap((r) => r.rows);
    const samples = rollouts.flatMap((r) => [r.samples.planner, r.samples.actor, r.samples.single]).filter((s): s is SampleSetRef => s !== undefined);
    const update = await grpoUpdate(training, {
      runId,
      checkpoint,
      samples,
      rl: cfg.rl,
      resetOptimizer: rlStep === 1,
      rlStart: state.rlStart!,
      ...(dynamic.enabled ? { keepGroups } : {}),
      ...(schedule ? { policyVersion: state.weights!.version } : {}),
    });
    const t3 = workflowNow();
    checkpoint = state.checkpoint = update.checkpoint;
    state.rlSeconds = (state.rlSeconds ?? 0) + (t3 - t.t0) / 1000;
    if (state.rlTrainedTokens !== undefined) state.rlTrainedTokens += update.tokens;
    const stepSchedule: RlStepSchedule | undefined = schedule && {
      maxStaleness: schedule.maxStaleness,
      staleness: update.staleness ?? {},
      droppedStale: schedule.droppedStale,
      ...(update.partialSamples ? { partial: update.partialSamples } : {}),
      trainerIdle: (t.t2 - t.t1) / Math.max(1, t3 - t.t0),
      inferenceIdle: idleShare(schedule.intervals, t.t0, t3),
      ...(update.offPolicyCapped !== undefined ? { capped: update.offPolicyCapped, meanWeight: update.offPolicyMeanWeight! } : {}),
    };
    const point: RlPoint = {
      step: rlStep,
      weightVersion: policy.weights.version,
      meanReward: mean(rows.map((r) => r.reward)),
      accuracy: rows.length === 0 ? 0 : rows.filter((r) => r.reward > 0).length / rows.length,
      ...(dynamic.enabled ? { rolloutBatches: rollouts.length, keptGroups: keepGroups.length } : {}),
      loss: update.loss,
      rows: update.rows,
      skipped: update.skipped,
      clipFraction: update.pgClipFrac,
      update: {
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
      },
      seconds: { publish: (t.t1 - t.t0) / 1000, rollout: (t.t2 - t.t1) / 1000, train: (t3 - t.t2) / 1000, ...(remote ? { sync: (t.t1 - t.tSync) / 1000 } : {}) },
      ...timelineCounts(samples),
      ...(rollouts[0]?.tree ? { tree: rollouts[0].tree } : {}),
      ...(rollouts[0]?.horizon ? { horizon: rollouts[0].horizon } : {}),
      ...(stepSchedule ? { schedule: stepSchedule } : {}),
    };
    rlPoints.push(point);
    state.rlDone = rlStep;
    Object.assign(progress, { phase: 'rl', step: checkpoint.step, lastLoss: update.loss, rlStep, lastReward: point.meanReward, lastAccuracy: point.accuracy, ...(stepSchedule ? { lastSchedule: stepSchedule } : {}) });
    upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
    await metrics([
      {
        kind: 'rl',
        step: rlStep,
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
        ...(stepSchedule ? { schedule: stepSchedule } : {}),
      },
    ]);
    log.info('rl step', { step: rlStep, meanReward: point.meanReward, loss: point.loss, seconds: point.seconds, ...(stepSchedule ? { staleness: stepSchedule.staleness } : {}) });
  };

  const afterStep = async (rlStep: number): Promise<void> => {
    if (cfg.eval.rlEverySteps > 0 && rlStep % cfg.eval.rlEverySteps === 0 && rlStep < rlSteps) await rlEvaluate(rlStep);
    await save();
  };

  if (maxStaleness === 0) {
    // Synchronous: publish → rollout → train, one after another.
    for (let rlStep = rlDone() + 1; rlStep <= rlSteps; rlStep++) {
      progress.phase = 'rl';
      const t0 = workflowNow();
      const { policy, tSync } = await rolloutPolicy();
      const t1 = workflowNow();
      const got = await runRollouts(rlStep, policy);
      await trainStep(rlStep, policy, got, { t0, tSync, t1, t2: workflowNow() });
      await afterStep(rlStep);
      await maybeContinueAsNew();
    }
  } else {
    // Asynchronous (docs/async-rl.md): while step N trains, the rollouts of steps N+1 … N+k run as
    // child workflows on the newest weights published when each started. Everything is in this
    // workflow's history: a crash of a worker or of the server loses and repeats nothing.
    const inflight = new Map<number, { policy: PolicyRef; interval: RolloutInterval; done: Promise<StepRollouts> }>();
    const intervals: RolloutInterval[] = [];
    for (const p of state.pendingRollouts ?? []) {
      const interval: RolloutInterval = { started: p.started, ended: p.ended };
      intervals.push(interval);
      inflight.set(p.step, { policy: p.policy, interval, done: Promise.resolve(p.got) });
    }
    delete state.pendingRollouts;
    const launch = (step: number, policy: PolicyRef): void => {
      const interval: RolloutInterval = { started: workflowNow() };
      intervals.push(interval);
      const done = runRollouts(step, policy).then((got) => {
        interval.ended = workflowNow();
        return got;
      });
      // Awaited when its step trains; a failure fails the run there.
      done.catch(() => undefined);
      inflight.set(step, { policy, interval, done });
    };
    for (let rlStep = rlDone() + 1; rlStep <= rlSteps; rlStep++) {
      progress.phase = 'rl';
      const t0 = workflowNow();
      const { policy, tSync } = await rolloutPolicy();
      const t1 = workflowNow();
      for (const s of stepsToLaunch(rlStep, rlSteps, maxStaleness)) if (!inflight.has(s)) launch(s, policy);
      const mine = inflight.get(rlStep)!;
      let got = await mine.done;
      inflight.delete(rlStep);
      const t2 = workflowNow();
      // Never more than maxStaleness versions behind (the schedule guarantees it; a violation is
      // recorded and its samples left untrained, not trained off-policy beyond the bound).
      const behind = policy.weights.version - mine.policy.weights.version;
      const droppedStale = behind > maxStaleness ? got.rollouts.reduce((n, r) => n + r.episodes, 0) : 0;
      if (droppedStale > 0) {
        log.warn('rollout too stale: not trained', { rlStep, behind, maxStaleness, episodes: droppedStale });
        got = { rollouts: got.rollouts.map((r) => ({ ...r, samples: {} })), keepGroups: got.keepGroups };
      }
      await trainStep(rlStep, mine.policy, got, { t0, tSync, t1, t2 }, { maxStaleness, droppedStale, intervals });
      // Intervals that ended before this step began matter no more.
      intervals.splice(0, intervals.length, ...intervals.filter((i) => i.ended === undefined || i.ended > t0));
      await afterStep(rlStep);
      if (continueAsNewDue()) {
        // Rollouts in flight finish first and travel in the state: none is lost or run twice.
        state.pendingRollouts = [];
        for (const [step, l] of inflight) state.pendingRollouts.push({ step, policy: l.policy, got: await l.done, started: l.interval.started, ended: l.interval.ended ?? workflowNow() });
      }
      await maybeContinueAsNew();
    }
  }
  if (rlSteps > 0 && rlEvals.at(-1)!.step !== rlSteps) await rlEvaluate(rlSteps);

  // ---- The baselines (compare.*), then every compared policy once on the test problems ----
  const baselineLine = (label: string, e: RlEvalPoint) => metrics([{ kind: 'baseline', label, accuracy: e.greedy.accuracy, stderr: e.greedy.stderr }]);
  if (rlSteps > 0 && cfg.compare.moreSft && !state.moreSft) {
    progress.phase = 'more-sft';
    state.moreSft = await sftBaseline(cfg, MORE_SFT_SUFFIX, state.rlStart!, dataset, rlSpent(state), evaluateRl);
    await baselineLine(`SFT + ${state.moreSft.steps} more SFT steps`, state.moreSft.eval);
    await save();
  }
  if (rlSteps > 0 && cfg.compare.filteredSft && !state.filteredSft) {
    progress.phase = 'filtered-sft';
    const filtered = await data.prepareSftDataset({ runId: `${runId}${FILTERED_SFT_SUFFIX}`, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq, filter: 'tool-using' });
    state.filteredSft = await sftBaseline(cfg, FILTERED_SFT_SUFFIX, state.rlStart!, filtered.ref, rlSpent(state), evaluateRl);
    await baselineLine(`SFT + ${state.filteredSft.steps} SFT steps on tool-using demonstrations`, state.filteredSft.eval);
    await save();
  }
  if (rlSteps > 0 && cfg.compare.rft && !state.rft) {
    progress.phase = 'rft';
    state.rft = await rftBaseline(cfg, state.rlStart!, evaluateRl, {
      ...(state.rftProgress ? { progress: state.rftProgress } : {}),
      saveProgress: async (p) => {
        state.rftProgress = p;
        await save();
      },
      metrics: (line) => metrics([{ kind: 'rft', ...line }]),
    });
    delete state.rftProgress;
    await baselineLine(`SFT + ${state.rft.steps} RFT steps`, state.rft.eval);
    await save();
  }
  if (rlSteps > 0 && testSetSize(cfg) > 0) {
    progress.phase = 'test';
    const test = (state.test ??= {});
    const rlWeights = await publish();
    const fixed = (w: WeightsInfo | undefined) => (w ? () => Promise.resolve(w) : undefined);
    const policies: Array<[ComparedPolicy, (() => Promise<WeightsInfo>) | undefined]> = [
      // The RL start under a key of its own: publishing it as one of the run's versions would move the run's latest weights.
      ['sftOnly', () => training.publishWeights({ runId: `${runId}${SFT_ONLY_SUFFIX}`, checkpoint: state.rlStart!, version: 0 })],
      ['rl', fixed(rlWeights)],
      ['moreSft', fixed(state.moreSft?.weights)],
      ['filteredSft', fixed(state.filteredSft?.weights)],
      ['rft', fixed(state.rft?.weights)],
    ];
    for (const [name, weightsOf] of policies) {
      if (!weightsOf || test[name]) continue;
      const weights = await weightsOf();
      const target = { part: 'test' as const, ...(cfg.task.kind === 'arith' && cfg.eval.passAtK > 1 ? { samplesPerProblem: cfg.eval.passAtK } : {}) };
      test[name] = { weightVersion: weights.version, ...(await kind.evaluate(cfg, weights, target)) };
      const e = test[name];
      await metrics([{ kind: 'test', policy: name, greedyAccuracy: e.greedy.accuracy, stderr: e.greedy.stderr, ...(e.sampled ? { sampledAccuracy: e.sampled.accuracy } : {}), ...(e.passAtK ? { passAtK: e.passAtK } : {}), ...(e.tools ? { actToolRate: e.tools.actToolRate } : {}) }]);
      await save();
    }
  }
  if (rlSteps > 0) {
    const start = rlEvals[0]!;
    await metrics([{ kind: 'baseline', label: 'SFT only', accuracy: start.greedy.accuracy, stderr: start.greedy.stderr }]);
  }

  // The SFT distribution once more at the end: did RL keep what SFT taught?
  const final = lastEvalHere() ?? (await evaluate());
  trimState(state);
  progress.phase = 'report';
  const report = await records.renderCurves({ runId, title: `${cfg.experiment} (${runId})` });
  progress.phase = 'done';
  // Key order is what the Web UI shows first: the outcome, then the curves.
  return {
    experiment: cfg.experiment,
    ...(rlSteps > 0 ? { comparison: compare(rlEvals, state, rlSteps) } : {}),
    metricsFile: report.metricsFile,
    curvesPng: report.png,
    backend,
    sftSteps: Math.min(cfg.sft.steps, checkpoint.step - rlDone()),
    rlSteps: rlDone(),
    finalLoss: state.losses.at(-1)?.loss,
    final,
    // The last points only (trimState): the whole curves are in the metrics file (metricsFile).
    evals: state.evals,
    rlEvals,
    rl: rlPoints,
    checkpoint,
    weights: state.weights,
    losses: state.losses,
  };
}

/** What RL spent, the SFT baselines' budget under rl-wall-time or rl-trained-tokens. */
function rlSpent(state: RunState): RlSpent {
  return { seconds: state.rlSeconds ?? 0, ...(state.rlTrainedTokens !== undefined ? { trainedTokens: state.rlTrainedTokens } : {}) };
}

/** Test problems (arithmetic) or layouts (grid) each compared policy plays once; 0: the comparison reads validation. */
function testSetSize(cfg: RunConfig): number {
  return cfg.task.kind === 'grid' ? cfg.task.grid!.testLayouts : cfg.task.rl.testProblems;
}

/**
 * The comparison the run returns: each policy on the test problems (evaluated once each, after
 * training), or for runs without a test evaluation the validation evaluations (the first and last
 * RL evaluation, the baselines' own).
 */
function compare(rlEvals: RlEvalPoint[], state: RunState, rlSteps: number): Comparison {
  const first = rlEvals[0]!;
  const last = rlEvals.at(-1)!;
  // Grid runs also compare success per plan horizon.
  const pick = (e: Omit<RlEvalPoint, 'step'>): ComparedResult => ({
    greedy: e.greedy,
    ...(e.sampled ? { sampled: e.sampled } : {}),
    ...(e.byHorizon ? { byHorizon: e.byHorizon } : {}),
    ...(e.passAtK ? { passAtK: e.passAtK } : {}),
    ...(e.tools ? { tools: e.tools } : {}),
    ...(e.perProblem ? { perProblem: e.perProblem } : {}),
  });
  const test = state.test;
  const of = (name: ComparedPolicy, validation: RlEvalPoint | undefined): ComparedResult | undefined => {
    const e = test ? test[name] : validation;
    return e ? pick(e) : undefined;
  };
  const sftSpent = (b: RunState['moreSft']) => (b ? { steps: b.steps, seconds: round1(b.seconds), ...(b.trainedTokens !== undefined ? { trainedTokens: b.trainedTokens } : {}) } : {});
  const moreSft = of('moreSft', state.moreSft?.eval);
  const filteredSft = of('filteredSft', state.filteredSft?.eval);
  const rft = of('rft', state.rft?.eval);
  return {
    problems: (test?.sftOnly ?? first).greedy.total,
    ...(test ? { split: 'test' as const } : {}),
    sftOnly: of('sftOnly', first)!,
    ...(moreSft ? { moreSft: { ...moreSft, ...sftSpent(state.moreSft) } } : {}),
    ...(filteredSft ? { filteredSft: { ...filteredSft, ...sftSpent(state.filteredSft) } } : {}),
    ...(rft ? { rft: { ...rft, steps: state.rft!.steps, seconds: round1(state.rft!.seconds) } } : {}),
    rl: { ...of('rl', last)!, steps: rlSteps, seconds: round1(state.rlSeconds ?? 0), ...(state.rlTrainedTokens !== undefined ? { trainedTokens: state.rlTrainedTokens } : {}) },
  };
}

/**
 * inference.engine openai: the server rollouts generate on, which must receive every step's weights
 * (inference.openai.weightSync); refusals name the field.
 */
function remotePolicy(cfg: RunConfig): { ref: RemoteEngineRef; dir: string } | undefined {
  const o = cfg.inference.openai;
  if (cfg.inference.engine !== 'openai' || !o) return undefined;
  const refuse = (path: string, message: string): never => {
    throw configFailure(new ConfigError('workflow input', [{ path, message }]));
  };
  if (!o.weightSync) {
    return refuse('inference.openai.weightSync', 'trainingRun trains the policy it serves: a remote engine needs weightSync: { dir } so each step\'s weights reach the server (to play a fixed remote model, run planActJob with "train": false)');
  }
  if (o.tokenizer !== undefined) return refuse('inference.openai.tokenizer', "a synced server serves this run's policy, whose tokenizer is the project's; leave inference.openai.tokenizer out");
  return { ref: { baseUrl: o.baseUrl, model: o.model, synced: true }, dir: o.weightSync.dir };
}


/** Greedy success rate per plan horizon for a metrics line, e.g. { byHorizon: { "5": 0.6 } }; nothing for arithmetic. */
function horizonRates(rows: HorizonSuccess[] | undefined): { byHorizon?: Record<string, number> } {
  return rows ? { byHorizon: Object.fromEntries(rows.map((r) => [String(r.horizon), r.rate])) } : {};
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** The step's timeline counts, summed over its sample sets (absent when they were not merged). */
function timelineCounts(sets: SampleSetRef[]): Pick<RlPoint, 'timelines'> {
  const timelines = sumCounts(sets.flatMap((s) => (s.timelines ? [s.timelines] : [])));
  return timelines ? { timelines } : {};
}
