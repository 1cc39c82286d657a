/**
 * One rollout of a planActJob: a planActRollout child in shared mode, the rollout session's
 * delivery in dual mode, and the single-agent fallback when the joint rollout cannot happen
 * (partner missing or terminated, session past its timeout or gone), recorded as such (FellBack
 * search attribute, memo, metric, result), or a typed failure when rollout.fallbackOnTimeout is off.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowCancellationType,
  condition,
  executeChild,
  log,
  metricMeter,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { FallbackReason } from '../../src/contracts/rollout-session';
import type { JobRolloutResult } from '../../src/contracts/plan-act-job';
import { withDeadline } from '../clock';
import { planActRollout } from '../plan-act-rollout';
import { rolloutTerms } from '../rollout-session';
import { FELL_BACK } from '../search-attributes';
import { sessionWorkflowId } from '../messages';
import { singleAgentRollout } from '../single-agent-rollout';
import type { Job } from './job';

/** Failure types when fallbackOnTimeout is off, one per reason, so callers can tell them apart. */
export const FALLBACK_ERROR_TYPES: Record<FallbackReason, string> = {
  'partner-missing': 'BarrierTimeout',
  'partner-lost': 'PartnerLost',
  'rollout-timeout': 'RolloutTimeout',
  'session-unresponsive': 'SessionUnresponsive',
  'session-failed': 'SessionFailed',
};

const fallbackCounter = metricMeter.createCounter('plan_act_fallbacks', 'rollouts', 'single-agent rollouts run because a joint Plan/Act rollout could not happen');

/** Rollout `rolloutId` as the job's role takes part in it. */
export function jobRollout(job: Job, rolloutId: number): Promise<JobRolloutResult> {
  return job.input.role === 'shared' ? sharedRollout(job, rolloutId) : dualRollout(job, rolloutId);
}

async function sharedRollout(job: Job, rolloutId: number): Promise<JobRolloutResult> {
  const { cfg, self, policy } = job;
  job.state.phase = 'rollout';
  const run = await withDeadline(cfg.rollout.rolloutTimeoutSec * 1000, () =>
    executeChild(planActRollout, {
      workflowId: `${self}/rollout-${rolloutId}`,
      cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
      args: [{ runId: self, rolloutId, mode: 'shared', config: cfg, policies: { planner: policy, actor: policy } }],
    }),
  );
  if (run.timedOut) {
    return fallBack(job, rolloutId, 'rollout-timeout', `rollout ${rolloutId} did not finish within rolloutTimeoutSec=${cfg.rollout.rolloutTimeoutSec}`);
  }
  const s = run.value;
  return { rolloutId, outcome: 'shared', episodes: s.episodes, meanReward: s.meanReward, samples: s.samples };
}

async function dualRollout(job: Job, rolloutId: number): Promise<JobRolloutResult> {
  const { cfg, self, state, deliveries } = job;
  const role = job.input.role as 'planner' | 'actor';
  const sessionId = sessionWorkflowId(cfg.experiment, rolloutId);
  state.phase = 'arriving';
  try {
    await job.activities.jobs.arriveAtSession({
      sessionWorkflowId: sessionId,
      session: { experiment: cfg.experiment, rolloutId, config: cfg },
      arrival: { role, jobWorkflowId: self, jobRunId: workflowInfo().firstExecutionRunId, policy: job.policy, terms: rolloutTerms(cfg) },
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
    if (!d.samples || d.samples.samples === 0) noSamples(job, rolloutId, role, d.episodes);
    return { rolloutId, outcome: 'joint', sessionWorkflowId: sessionId, episodes: d.episodes, meanReward: d.meanReward, samples };
  }
  if (d && d.outcome !== 'completed') return fallBack(job, rolloutId, d.outcome, d.message ?? d.outcome, sessionId);
  return fallBack(
    job,
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
function noSamples(job: Job, rolloutId: number, role: 'planner' | 'actor', episodes: number): void {
  const why =
    role === 'actor'
      ? 'no planner turn wrote an ACT line, so the actor never acted (an untrained planner writes none: start both jobs from an SFT run with "weightsFromRun")'
      : 'the session delivered no planner turns';
  const warning = `rollout ${rolloutId} gave this ${role} job no samples to train on (${episodes} episodes): ${why}`;
  log.warn(warning, { rolloutId, role, episodes });
  (job.state.warnings ??= []).push(warning);
}

async function fallBack(job: Job, rolloutId: number, reason: FallbackReason, message: string, sessionId?: string): Promise<JobRolloutResult> {
  const { input, self, cfg, state } = job;
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
    args: [{ runId: self, rolloutId, config: cfg, policy: job.policy, reason: what }],
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
