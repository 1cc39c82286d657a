/**
 * planActJob: a Plan/Act training job's rollout side, started on its own with the Temporal CLI.
 *
 *   role planner | actor (dual mode): for each rollout id, arrive at that rollout's session
 *     (rolloutSession) and wait for it to deliver this job's own samples.
 *   role shared: one policy plays both roles; each rollout is a planActRollout child.
 *
 * When the joint rollout cannot happen (partner missing or terminated, session past its timeout or
 * gone) the job runs a single-agent rollout with its own policy if rollout.fallbackOnTimeout, and
 * records it (FellBack search attribute, memo, metric, result); otherwise it fails with a typed
 * error saying what happened. Its own wait is bounded too, so nothing waits forever.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowCancellationType,
  condition,
  continueAsNew,
  executeChild,
  log,
  metricMeter,
  patched,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunConfig } from '../src/config/schema';
import { withDeadline } from './common';
import { fingerprint } from '../src/domain/rng';
import { failAsRun } from './failures';
import { ConfigError } from '../src/config/errors';
import { configFailure, parseConfigOrFail, resolveConfigOrFail } from './parse-config';
import { planActProxies } from './activity-proxies';
import { grpoUpdate } from './policy-update';
import { planActRollout } from './plan-act-rollout';
import type { FallbackReason, JobRolloutResult, PlanActJobInput, PlanActJobResult, PlanActJobState, JobEvalPoint, JobTrainingStep, SampleSetRef, SessionDelivery } from '../src/contracts/plan-act';
import type { PolicyRef } from '../src/contracts/weights';
import { rolloutTerms } from './rollout-session';
import { EXPERIMENT, FELL_BACK, ROLE, ROLLOUT_ID } from './search-attributes';
import { jobStateQuery, sessionDeliverySignal, sessionPhaseSignal, sessionWorkflowId } from './shared';
import { singleAgentRollout } from './single-agent-rollout';
import type { CheckpointInfo, WeightsInfo } from '../src/contracts/weights';

/** Failure types when fallbackOnTimeout is off, one per reason, so callers can tell them apart. */
export const FALLBACK_ERROR_TYPES: Record<FallbackReason, string> = {
  'partner-missing': 'BarrierTimeout',
  'partner-lost': 'PartnerLost',
  'rollout-timeout': 'RolloutTimeout',
  'session-unresponsive': 'SessionUnresponsive',
  'session-failed': 'SessionFailed',
};

/** State carried across continue-as-new. */
export interface PlanActJobCarry {
  config: RunConfig;
  weights: WeightsInfo;
  completed: JobRolloutResult[];
  fallbacks: number;
  /** Jobs that train: their checkpoint and the one they started from (the KL reference). */
  checkpoint?: CheckpointInfo;
  start?: CheckpointInfo;
  evals?: JobEvalPoint[];
}

const fallbackCounter = metricMeter.createCounter('plan_act_fallbacks', 'rollouts', 'single-agent rollouts run because a joint Plan/Act rollout could not happen');

export async function planActJob(input: PlanActJobInput, carry?: PlanActJobCarry): Promise<PlanActJobResult> {
  const self = workflowInfo().workflowId;
  const rolloutIds = input.rolloutIds ?? [1];
  const state: PlanActJobState = {
    role: input.role,
    phase: 'setup',
    completed: carry?.completed ?? [],
    remaining: rolloutIds.filter((id) => !carry?.completed.some((c) => c.rolloutId === id)),
    fallbacks: carry?.fallbacks ?? 0,
  };
  const deliveries = new Map<number, SessionDelivery>();
  setHandler(jobStateQuery, () => state);
  setHandler(sessionDeliverySignal, (d) => void deliveries.set(d.rolloutId, d));
  setHandler(sessionPhaseSignal, ({ rolloutId, phase }) => {
    if (rolloutId === state.rolloutId) state.sessionPhase = phase;
  });

  validateInput(input, rolloutIds);
  const cfg = carry?.config ?? (await loadConfig(input));
  const { jobs, training, evaluation, records } = planActProxies(cfg.timeouts, cfg.trainer);
  validateRole(input, cfg);
  upsertSearchAttributes([{ key: EXPERIMENT, value: cfg.experiment }, { key: ROLE, value: input.role }, { key: FELL_BACK, value: state.fallbacks > 0 }]);

  // Jobs started before jobs trained keep the commands they were recorded with.
  const trains = patched('plan-act-job-trains') && input.train !== false;
  if (trains && cfg.inference.engine === 'openai') {
    throw ApplicationFailure.nonRetryable('inference.engine: openai serves a remote model this job cannot train or publish; start the job with "train": false', 'ConfigError');
  }
  if (trains && input.weights !== undefined) {
    throw ApplicationFailure.nonRetryable('invalid planActJob input: weights (a bare ONNX export) cannot be trained; give weightsFromRun, or train: false', 'ConfigError');
  }
  let weights: WeightsInfo;
  let checkpoint = carry?.checkpoint;
  let start = carry?.start;
  if (carry) weights = carry.weights;
  else if (trains) {
    // Checkpoints and weights are named after the workflow id: an id used before with another
    // config or other starting weights fails here, naming the id, instead of training the old policy.
    // Jobs recorded before this check keep the commands they were recorded with.
    if (patched('plan-act-job-claims-run-id')) {
      const configHash = fingerprint({ config: cfg, role: input.role, weightsFromRun: input.weightsFromRun ?? null, fromStep: input.fromStep ?? null });
      await failAsRun(records.claimRunId({ runId: self, configHash }));
    }
    checkpoint = start = await initialCheckpoint();
    weights = await training.publishWeights({ runId: self, checkpoint, version: 0 });
  } else weights = await resolveWeights();
  state.weights = weights;
  if (checkpoint) state.checkpoint = checkpoint;
  const evals: JobEvalPoint[] = carry?.evals ?? [];
  if (trains) {
    state.evals = evals;
    if (evals.length === 0 && cfg.eval.rlEverySteps > 0) await evaluateOwn(0);
  }
  const remote = cfg.inference.engine === 'openai' ? cfg.inference.openai : undefined;
  const policyOf = (w: WeightsInfo): PolicyRef => ({
    weights: w,
    ...(input.inferenceQueue !== undefined ? { inferenceQueue: input.inferenceQueue } : {}),
    ...(remote ? { remote } : {}),
  });
  let policy = policyOf(weights);

  while (state.remaining.length > 0) {
    const rolloutId = state.remaining[0]!;
    state.rolloutId = rolloutId;
    delete state.sessionPhase;
    upsertSearchAttributes([{ key: ROLLOUT_ID, value: rolloutId }]);
    const result = input.role === 'shared' ? await sharedRollout(rolloutId) : await dualRollout(rolloutId);
    if (trains) {
      result.weightVersion = weights.version;
      const update = await trainOn(result);
      if (update) result.training = update;
    }
    state.completed.push(result);
    if (trains && cfg.eval.rlEverySteps > 0 && state.completed.length % cfg.eval.rlEverySteps === 0) await evaluateOwn(state.completed.length);
    state.remaining.shift();
    deliveries.delete(rolloutId);
    log.info('rollout done', { rolloutId, outcome: result.outcome, reason: result.reason, meanReward: result.meanReward });
    if (state.remaining.length > 0 && workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof planActJob>(input, {
        config: cfg,
        weights,
        completed: state.completed,
        fallbacks: state.fallbacks,
        ...(checkpoint ? { checkpoint } : {}),
        ...(start ? { start } : {}),
        ...(trains ? { evals } : {}),
      });
    }
  }
  state.phase = 'done';
  return { experiment: cfg.experiment, role: input.role, weights, ...(trains ? { evals } : {}), rollouts: state.completed, fallbacks: state.fallbacks };

  /**
   * Held-out evaluation of this job's current weights (task.evalProblems problems; the planner job
   * reads its planner accuracy, the actor job its actor accuracy), on the embedded engine.
   */
  async function evaluateOwn(afterRollouts: number): Promise<void> {
    const report = await evaluation.evaluatePolicy({ runId: self, weights, task: cfg.task, rollout: cfg.rollout, seed: cfg.seed, maxNewTokens: cfg.eval.maxNewTokens });
    const point: JobEvalPoint = {
      afterRollouts,
      weightVersion: weights.version,
      // Arithmetic reports always carry both (a grid config is refused above).
      plannerAccuracy: report.plannerAccuracy!,
      actorAccuracy: report.actorAccuracy!,
      episodeAccuracy: report.episodeAccuracy,
    };
    evals.push(point);
    log.info('job evaluation', { ...point });
  }

  /** The checkpoint a training job starts from: an earlier run's latest, or a fresh policy of its own. */
  async function initialCheckpoint(): Promise<CheckpointInfo> {
    if (input.weightsFromRun !== undefined) {
      return training.checkpointFromRun({
        runId: self,
        fromRun: input.weightsFromRun,
        ...(input.fromStep !== undefined ? { step: input.fromStep } : {}),
        model: cfg.model,
      });
    }
    // A fresh policy of its own: the two jobs of a dual run are different models from the start.
    const seed = cfg.seed + (input.role === 'actor' ? 1 : 0);
    return (await training.initPolicy({ runId: self, model: cfg.model, seed })).checkpoint;
  }

  /**
   * One GRPO update of this job's policy on this job's own samples of the rollout (the planner's
   * turns, the actor's acts, both in shared mode, the single-agent episodes after a fallback), then
   * the new weights, which this job brings to its next rollout.
   */
  async function trainOn(result: JobRolloutResult): Promise<JobTrainingStep | undefined> {
    const sets = (['planner', 'actor', 'single'] as const).map((r) => result.samples[r]).filter((s): s is SampleSetRef => s !== undefined && s.samples > 0);
    if (sets.length === 0 || !checkpoint) return undefined;
    state.phase = 'training';
    const update = await grpoUpdate(training, {
      runId: self,
      checkpoint,
      samples: sets,
      rl: cfg.rl,
      resetOptimizer: checkpoint.step === start?.step,
      rlStart: start!,
    });
    checkpoint = state.checkpoint = update.checkpoint;
    weights = state.weights = await training.publishWeights({ runId: self, checkpoint, version: weights.version + 1 });
    policy = policyOf(weights);
    return { step: checkpoint.step, loss: update.loss, rows: update.rows, clipFraction: update.pgClipFrac, weightVersion: weights.version };
  }

  async function resolveWeights(): Promise<WeightsInfo> {
    if (input.weights) return input.weights;
    // A remote server's weights are its own: version 0 only labels the samples.
    if (cfg.inference.engine === 'openai') return { version: 0, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'remote' } };
    if (input.weightsFromRun !== undefined) return jobs.resolveRunWeights({ runId: input.weightsFromRun });
    // A fresh policy of its own: the two jobs of a dual run are different models from the start.
    const seed = cfg.seed + (input.role === 'actor' ? 1 : 0);
    const init = await training.initPolicy({ runId: self, model: cfg.model, seed });
    return training.publishWeights({ runId: self, checkpoint: init.checkpoint, version: 0 });
  }

  async function sharedRollout(rolloutId: number): Promise<JobRolloutResult> {
    state.phase = 'rollout';
    const run = await withDeadline(cfg.rollout.rolloutTimeoutSec * 1000, () =>
      executeChild(planActRollout, {
        workflowId: `${self}/rollout-${rolloutId}`,
        cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
        args: [{ runId: self, rolloutId, mode: 'shared', config: cfg, policies: { planner: policy, actor: policy } }],
      }),
    );
    if (run.timedOut) {
      return fallBack(rolloutId, 'rollout-timeout', `rollout ${rolloutId} did not finish within rolloutTimeoutSec=${cfg.rollout.rolloutTimeoutSec}`);
    }
    const s = run.value;
    return { rolloutId, outcome: 'shared', episodes: s.episodes, meanReward: s.meanReward, samples: s.samples };
  }

  async function dualRollout(rolloutId: number): Promise<JobRolloutResult> {
    const role = input.role as 'planner' | 'actor';
    const sessionId = sessionWorkflowId(cfg.experiment, rolloutId);
    state.phase = 'arriving';
    try {
      await jobs.arriveAtSession({
        sessionWorkflowId: sessionId,
        session: { experiment: cfg.experiment, rolloutId, config: cfg },
        arrival: { role, jobWorkflowId: self, jobRunId: workflowInfo().firstExecutionRunId, policy, terms: rolloutTerms(cfg) },
      });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === 'SessionRejected') throw ApplicationFailure.nonRetryable(cause.message, 'SessionRejected');
      throw err;
    }
    state.phase = 'waiting';
    // The session answers within barrier + rollout timeout; waiting a little longer than that
    // only guards against a session that was terminated or can no longer run.
    const budgetMs = (cfg.rollout.barrierTimeoutSec + cfg.rollout.rolloutTimeoutSec) * 1000;
    const answered = await condition(() => deliveries.has(rolloutId), budgetMs + 5000 + budgetMs * 0.05);
    const d = deliveries.get(rolloutId);
    if (answered && d?.outcome === 'completed') {
      // No samples for a role is possible: an actor gets none when no planner turn produced acts.
      const samples = d.samples ? { [role]: d.samples } : {};
      if (!d.samples || d.samples.samples === 0) noSamples(rolloutId, role, d.episodes);
      return { rolloutId, outcome: 'joint', sessionWorkflowId: sessionId, episodes: d.episodes, meanReward: d.meanReward, samples };
    }
    if (d && d.outcome !== 'completed') return fallBack(rolloutId, d.outcome, d.message ?? d.outcome, sessionId);
    return fallBack(
      rolloutId,
      'session-unresponsive',
      `session ${sessionId} sent no result within barrierTimeoutSec + rolloutTimeoutSec = ${budgetMs / 1000}s (was it terminated?)`,
      sessionId,
    );
  }

  /**
   * Said where a person looks (the job's log and jobState), since a job that trains on nothing
   * otherwise looks like one that trains: only a log line and query state, no command, so no patch.
   */
  function noSamples(rolloutId: number, role: 'planner' | 'actor', episodes: number): void {
    const why =
      role === 'actor'
        ? 'no planner turn wrote an ACT line, so the actor never acted (an untrained planner writes none: start both jobs from an SFT run with "weightsFromRun")'
        : 'the session delivered no planner turns';
    const warning = `rollout ${rolloutId} gave this ${role} job no samples to train on (${episodes} episodes): ${why}`;
    log.warn(warning, { rolloutId, role, episodes });
    (state.warnings ??= []).push(warning);
  }

  async function fallBack(rolloutId: number, reason: FallbackReason, message: string, sessionId?: string): Promise<JobRolloutResult> {
    const what = `${input.role} job ${self}, rollout ${rolloutId}: ${message}`;
    if (!cfg.rollout.fallbackOnTimeout) {
      throw ApplicationFailure.nonRetryable(`${what}. rollout.fallbackOnTimeout is false, so the job stops instead of running a single-agent rollout`, FALLBACK_ERROR_TYPES[reason], {
        rolloutId,
        reason,
        ...(sessionId !== undefined ? { sessionWorkflowId: sessionId } : {}),
      });
    }
    log.warn('falling back to a single-agent rollout', { rolloutId, reason, message });
    state.phase = 'fallback';
    state.fallbacks++;
    fallbackCounter.add(1, { role: input.role, reason });
    upsertSearchAttributes([{ key: FELL_BACK, value: true }]);
    upsertMemo({ fallbacks: state.fallbacks, lastFallback: { rolloutId, reason, message } });
    const s = await executeChild(singleAgentRollout, {
      workflowId: `${self}/fallback-r${rolloutId}`,
      args: [{ runId: self, rolloutId, config: cfg, policy, reason: what }],
    });
    return {
      rolloutId,
      outcome: 'fell-back',
      reason,
      message,
      ...(sessionId !== undefined ? { sessionWorkflowId: sessionId } : {}),
      episodes: s.episodes,
      meanReward: s.meanReward,
      samples: s.samples,
    };
  }
}

async function loadConfig(input: PlanActJobInput): Promise<RunConfig> {
  const cfg = await readConfig(input, input.role);
  // Plan/Act jobs run the arithmetic task; the grid world trains through trainingRun.
  if (cfg.task.kind !== 'arith') {
    throw configFailure(new ConfigError('planActJob input', [{ path: 'task.kind', message: 'planActJob runs the arithmetic Plan/Act task; task.kind grid runs through trainingRun' }]));
  }
  return cfg;
}

/** A job's config: its file (read by an activity, recorded once) or its inline config, resolved. */
export async function readConfig(input: Pick<PlanActJobInput, 'config' | 'configFile'>, role?: PlanActJobInput['role']): Promise<RunConfig> {
  if (input.configFile !== undefined) {
    // The file lives with the workers; its parsed content goes into the history, so replays and
    // continue-as-new never read it again.
    const { jobs } = planActProxies((await parseConfigOrFail({}, 'defaults')).timeouts);
    return jobs.loadJobConfig({ file: input.configFile, ...(role ? { role } : {}) });
  }
  return resolveConfigOrFail(input.config ?? {}, 'planActJob input', role ? { consumer: { workflow: 'planActJob', role } } : {});
}

function validateInput(input: PlanActJobInput, rolloutIds: number[]): void {
  const problems: string[] = [];
  if (!['planner', 'actor', 'shared'].includes(input.role)) problems.push(`role must be planner, actor or shared, got ${JSON.stringify(input.role)}`);
  if (input.config !== undefined && input.configFile !== undefined) problems.push('give config or configFile, not both');
  if (input.weights !== undefined && input.weightsFromRun !== undefined) problems.push('give weights or weightsFromRun, not both');
  if (rolloutIds.length === 0 || !rolloutIds.every((id) => Number.isSafeInteger(id) && id >= 0)) problems.push('rolloutIds must be non-negative integers');
  if (new Set(rolloutIds).size !== rolloutIds.length) problems.push('rolloutIds has duplicates');
  if (input.fromStep !== undefined && (input.weightsFromRun === undefined || input.train === false)) problems.push('fromStep needs weightsFromRun and a job that trains');
  if (problems.length > 0) throw ApplicationFailure.nonRetryable(`invalid planActJob input: ${problems.join('; ')}`, 'ConfigError', problems);
}

function validateRole(input: PlanActJobInput, cfg: RunConfig): void {
  // trainingRun's keys that mean nothing to a job: say so rather than ignore them.
  const notForJobs = [
    ...(cfg.init?.fromRun !== undefined ? ['init.fromRun (a job takes weightsFromRun / fromStep)'] : []),
    ...(cfg.compare?.moreSft ? ['compare.moreSft (trainingRun only)'] : []),
    ...(cfg.compare?.filteredSft ? ['compare.filteredSft (trainingRun only)'] : []),
    ...(cfg.compare?.rft ? ['compare.rft (trainingRun only)'] : []),
    // Demonstrations are SFT's; a job has none to make.
    ...(cfg.task.demoToolUseRate !== undefined && cfg.task.demoToolUseRate !== 1 ? ['task.demoToolUseRate (SFT demonstrations: trainingRun only)'] : []),
    ...(cfg.task.extraDemonstrations ? ['task.extraDemonstrations (SFT demonstrations: trainingRun only)'] : []),
    ...(cfg.rl.dynamicSampling?.enabled ? ['rl.dynamicSampling (trainingRun only: a job trains on the rollout it took part in)'] : []),
    ...((cfg.workflow?.continueAsNewEvery ?? 0) > 0 ? ['workflow.continueAsNewEvery (trainingRun only)'] : []),
    ...(cfg.inference.openai?.weightSync ? ['inference.openai.weightSync (trainingRun only: a job does not train a remote model)'] : []),
  ];
  if (notForJobs.length > 0) throw ApplicationFailure.nonRetryable(`invalid planActJob config: ${notForJobs.join('; ')}`, 'ConfigError');
  const wanted = input.role === 'shared' ? 'shared' : 'dual';
  if (cfg.rollout.kind !== 'plan-act' || cfg.rollout.mode !== wanted) {
    throw ApplicationFailure.nonRetryable(
      `a ${input.role} job needs rollout.kind: plan-act and rollout.mode: ${wanted}; the config has kind ${cfg.rollout.kind}, mode ${cfg.rollout.mode}`,
      'ConfigError',
    );
  }
}
