/**
 * planActJob: a Plan/Act training job's rollout side, started on its own with the Temporal CLI.
 *
 *   role planner | actor (dual mode): for each rollout id, arrive at that rollout's session
 *     (rolloutSession) and wait for it to deliver this job's own samples.
 *   role shared: one policy plays both roles; each rollout is a planActRollout child.
 *
 * When the joint rollout cannot happen the job falls back to a single-agent rollout or fails with a
 * typed error (rollouts.ts). A job that trains updates its own policy after each rollout (policy.ts).
 * This file is the job's order of commands: setup, starting policy, then each rollout in turn.
 */
import { CancellationScope, ContinueAsNew, continueAsNew, isCancellation, log, patched, setHandler, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { PlanActJobInput, PlanActJobResult, PlanActJobState } from '../../src/contracts/plan-act-job';
import type { SessionDelivery } from '../../src/contracts/rollout-session';
import { planActProxies } from '../activity-proxies';
import { EXPERIMENT, FELL_BACK, ROLE, ROLLOUT_ID } from '../search-attributes';
import { jobStateQuery, sessionDeliverySignal, sessionPhaseSignal } from '../messages';
import { loadConfig, validateInput, validateTraining } from './input';
import { CONFIG_REFUSALS_TABLE, refuseAsRecorded } from '../parse-config';
import { carryOf, policyOf, type Job, type JobSetup, type PlanActJobCarry } from './job';
import { evaluateOwn, startingPolicy, trainOn } from './policy';
import { jobRollout } from './rollouts';
import { JobTrackers } from './tracking';
import { jobEvalLine, jobRolloutLines } from '../../src/tracking/job-lines';

export type { PlanActJobCarry } from './job';

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
  // The config activity refuses what this job cannot run; jobs recorded before it did refuse here.
  const checkedByActivity = patched(CONFIG_REFUSALS_TABLE);
  const cfg = carry?.config ?? (await loadConfig(input, checkedByActivity));
  const activities = planActProxies(cfg.timeouts, cfg.trainer);
  const consumer = { workflow: 'planActJob' as const, role: input.role };
  if (!checkedByActivity) await refuseAsRecorded(cfg, 'planActJob input', { consumer });
  upsertSearchAttributes([{ key: EXPERIMENT, value: cfg.experiment }, { key: ROLE, value: input.role }, { key: FELL_BACK, value: state.fallbacks > 0 }]);

  // Jobs started before jobs trained keep the commands they were recorded with.
  const trains = patched('plan-act-job-trains') && input.train !== false;
  if (trains) {
    if (!checkedByActivity) await refuseAsRecorded(cfg, 'planActJob input', { consumer: { ...consumer, trains } });
    validateTraining(input);
  }
  // tracking.*: opened before the job does anything (a tracker it cannot use refuses it).
  const trackers = await JobTrackers.start(cfg, input.role, carry?.tracking);
  const setup: JobSetup = { input, self, cfg, state, deliveries, activities, trains };
  try {
    const result = await runJob(setup, trackers, carry);
    await trackers?.finish('FINISHED');
    return result;
  } catch (err) {
    // The MLflow run's status follows the job's (a continue-as-new goes on in the same run).
    if (trackers && !(err instanceof ContinueAsNew)) await CancellationScope.nonCancellable(() => trackers.finish(isCancellation(err) ? 'KILLED' : 'FAILED'));
    throw err;
  }
}

/** The job's starting policy, then each rollout in turn (and its update and evaluation when it trains). */
async function runJob(setup: JobSetup, trackers: JobTrackers | undefined, carry: PlanActJobCarry | undefined): Promise<PlanActJobResult> {
  const { input, cfg, state, trains, deliveries } = setup;
  const own = await startingPolicy(setup, carry);
  const job: Job = { ...setup, ...own, policy: policyOf(setup, own.weights), evals: carry?.evals ?? [] };
  const evaluate = async (afterRollouts: number) => {
    await evaluateOwn(job, afterRollouts);
    trackers?.log([jobEvalLine(job.evals.at(-1)!)]);
  };
  state.weights = job.weights;
  if (job.checkpoint) state.checkpoint = job.checkpoint;
  if (trains) {
    state.evals = job.evals;
    if (job.evals.length === 0 && cfg.eval.rlEverySteps > 0) await evaluate(0);
  }

  while (state.remaining.length > 0) {
    const rolloutId = state.remaining[0]!;
    state.rolloutId = rolloutId;
    delete state.sessionPhase;
    upsertSearchAttributes([{ key: ROLLOUT_ID, value: rolloutId }]);
    const result = await jobRollout(job, rolloutId);
    if (trains) {
      result.weightVersion = job.weights.version;
      const update = await trainOn(job, result);
      if (update) result.training = update;
    }
    state.completed.push(result);
    trackers?.log(jobRolloutLines(state.completed.length, result));
    if (trains && cfg.eval.rlEverySteps > 0 && state.completed.length % cfg.eval.rlEverySteps === 0) await evaluate(state.completed.length);
    state.remaining.shift();
    deliveries.delete(rolloutId);
    log.info('rollout done', { rolloutId, outcome: result.outcome, reason: result.reason, meanReward: result.meanReward });
    if (state.remaining.length > 0 && workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof planActJob>(input, { ...carryOf(job), ...(trackers ? { tracking: trackers.carry() } : {}) });
    }
  }
  state.phase = 'done';
  return { experiment: cfg.experiment, role: input.role, weights: job.weights, ...(trains ? { evals: job.evals } : {}), rollouts: state.completed, fallbacks: state.fallbacks };
}
