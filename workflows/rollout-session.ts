/**
 * rolloutSession: the rollout barrier of dual mode. One session per (experiment, rollout id); the
 * planner job and the actor job each arrive with update-with-start (activity arriveAtSession), so
 * whichever comes first creates it and the second joins it, in either order.
 *
 *   waiting    both roles present within barrierTimeoutSec, else "partner-missing"
 *   running    the episodes, once, with the planner job's and the actor job's weights (the
 *              rollout runs inline, one child per GRPO group), within rolloutTimeoutSec, else
 *              "rollout-timeout"
 *   delivering each job gets a signal with the outcome and only its own role's samples
 *
 * When the episodes start and before delivering, the session signals both jobs its phase: a signal
 * to a job that stopped running (terminated, failed) fails, which is how a crashed partner is
 * noticed ("partner-lost") instead of being waited for. Sessions of different rollout ids are
 * separate workflows and proceed independently.
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  condition,
  getExternalWorkflowHandle,
  log,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  allHandlersFinished,
  patched,
  isCancellation,
} from '@temporalio/workflow';
import { activityProxies } from './activity-proxies';
import type { RunConfig } from '../src/config/schema';
import { errorMessage } from '../src/planact/error-message';
import { withDeadline, workflowNow } from './clock';
import { runPlanActRollout } from './plan-act-rollout';
import type { Arrival, RolloutSessionInput, RolloutSessionResult, RolloutSessionState, RolloutTerms, SessionDelivery, SessionOutcome, SessionPhase } from '../src/contracts/rollout-session';
import type { PlanActRoleName } from '../src/contracts/plan-act-episode';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import { EXPERIMENT, ROLLOUT_ID } from './search-attributes';
import { arriveUpdate, sessionDeliverySignal, sessionPhaseSignal, sessionStateQuery } from './messages';

const ROLES: PlanActRoleName[] = ['planner', 'actor'];

/** What both jobs must agree on; timeouts included, so neither job waits on terms the other ignores. */
export function rolloutTerms(cfg: RunConfig): RolloutTerms {
  const { fallbackOnTimeout: _own, ...rollout } = cfg.rollout;
  const { promptsPerStep, groupSize, temperature, topP, maxNewTokens } = cfg.rl;
  return { experiment: cfg.experiment, seed: cfg.seed, task: cfg.task, rollout, rl: { promptsPerStep, groupSize, temperature, topP, maxNewTokens } };
}

function termsDiff(a: RolloutTerms, b: RolloutTerms): string[] {
  const keys = Object.keys(a) as Array<keyof RolloutTerms>;
  return keys.filter((k) => JSON.stringify(a[k]) !== JSON.stringify(b[k]));
}

export async function rolloutSession(input: RolloutSessionInput): Promise<RolloutSessionResult> {
  const cfg = input.config;
  const self = workflowInfo().workflowId;
  const terms = rolloutTerms(cfg);
  const arrivals: Partial<Record<PlanActRoleName, Arrival>> = {};
  const state: RolloutSessionState = { experiment: input.experiment, rolloutId: input.rolloutId, phase: 'waiting', arrivals: {} };
  let summary: RolloutSummary | undefined;
  let recording: Promise<void> = Promise.resolve();

  setHandler(sessionStateQuery, () => state);
  setHandler(
    arriveUpdate,
    (arrival) => {
      if (!arrivals[arrival.role]) {
        arrivals[arrival.role] = arrival;
        state.arrivals[arrival.role] = { jobWorkflowId: arrival.jobWorkflowId, weightsVersion: arrival.policy.weights.version, arrivedAt: workflowNow(), delivered: false };
        log.info('job arrived', { role: arrival.role, job: arrival.jobWorkflowId, phase: state.phase });
      }
      return { sessionWorkflowId: self, sessionRunId: workflowInfo().runId, present: ROLES.filter((r) => arrivals[r]) };
    },
    {
      validator: (arrival: Arrival) => {
        if (!ROLES.includes(arrival.role)) throw new Error(`role must be planner or actor, got ${JSON.stringify(arrival.role)}`);
        const taken = arrivals[arrival.role];
        if (taken && taken.jobWorkflowId !== arrival.jobWorkflowId) {
          throw new Error(`role ${arrival.role} is already taken by job ${taken.jobWorkflowId}`);
        }
        const diff = termsDiff(terms, arrival.terms);
        if (diff.length > 0) throw new Error(`its config differs from the first job's in ${diff.join(', ')}`);
      },
    },
  );
  upsertSearchAttributes([{ key: EXPERIMENT, value: input.experiment }, { key: ROLLOUT_ID, value: input.rolloutId }]);

  const finish = (outcome: SessionOutcome, message?: string) => {
    state.outcome = outcome;
    if (message !== undefined) state.message = message;
    upsertMemo({ outcome, ...(message !== undefined ? { message } : {}) });
  };

  const bothPresent = await condition(() => ROLES.every((r) => arrivals[r]), cfg.rollout.barrierTimeoutSec * 1000);
  const missingAtBarrier = ROLES.filter((r) => !arrivals[r]);
  if (!bothPresent) {
    finish('partner-missing', `no ${missingAtBarrier.join(' or ')} job arrived at rollout ${input.rolloutId} within barrierTimeoutSec=${cfg.rollout.barrierTimeoutSec}`);
  } else {
    state.barrierMetAt = workflowNow();
    state.phase = 'running';
    const work = new CancellationScope();
    const running = work
      .run(() =>
        withDeadline(cfg.rollout.rolloutTimeoutSec * 1000, () =>
          runPlanActRollout(
            { runId: self, rolloutId: input.rolloutId, mode: 'dual', config: cfg, policies: { planner: arrivals.planner!.policy, actor: arrivals.actor!.policy } },
            // Report a timeout at once; the episodes are told to stop but not waited for.
            { cancellationType: ChildWorkflowCancellationType.TRY_CANCEL },
          ),
        ),
      )
      .then(
        (run) => ({ ok: true as const, run }),
        (err: unknown) => ({ ok: false as const, err }),
      );
    // Liveness is checked while the episodes start, not before, so meeting costs no extra round trip.
    const lost = await unreachableJobs('running');
    if (lost.length > 0) {
      work.cancel();
      await running;
      finish('partner-lost', lostMessage(lost, 'before the episodes started'));
    } else {
      const out = await running;
      if (!out.ok) {
        finish('session-failed', `rollout ${input.rolloutId} failed: ${errorMessage(out.err)}`);
      } else if (out.run.timedOut) {
        finish('rollout-timeout', `rollout ${input.rolloutId} did not finish within rolloutTimeoutSec=${cfg.rollout.rolloutTimeoutSec}`);
      } else {
        summary = out.run.value;
        const { samples: _refs, ...rest } = summary;
        state.summary = rest;
        // Both roles' samples in one record for the rollout viewer, written while the jobs are told.
        if (patched('session-record')) {
          const jobs = Object.fromEntries(ROLES.map((r) => [r, arrivals[r]!.jobWorkflowId]));
          recording = activityProxies(cfg.timeouts)
            .records.recordSession({ version: 1, sessionId: self, rolloutId: input.rolloutId, samples: summary.samples, jobs })
            .catch((err: unknown) => {
              if (isCancellation(err)) throw err;
              log.warn('could not write the session record (the viewer will show each role alone)', { error: errorMessage(err) });
            });
        }
        const gone = await unreachableJobs('delivering');
        if (gone.length > 0) finish('partner-lost', lostMessage(gone, 'during the episodes'));
        else finish('completed');
      }
    }
  }

  // Deliver, then again for any job that arrived meanwhile (after the barrier closed), so nobody
  // who reached this session is left waiting for an answer.
  state.phase = 'delivering';
  for (;;) {
    await deliverAll();
    await condition(allHandlersFinished);
    if (ROLES.every((r) => !arrivals[r] || state.arrivals[r]!.delivered || state.arrivals[r]!.unreachable)) break;
  }
  await recording;
  state.phase = 'done';
  log.info('rollout session done', { rolloutId: input.rolloutId, outcome: state.outcome });
  return {
    rolloutId: input.rolloutId,
    outcome: state.outcome!,
    ...(state.message !== undefined ? { message: state.message } : {}),
    arrivals: state.arrivals,
    ...(state.summary ? { summary: state.summary } : {}),
  };

  /** Roles whose job no longer accepts signals (it stopped running). */
  async function unreachableJobs(phase: SessionPhase): Promise<PlanActRoleName[]> {
    const results = await Promise.allSettled(
      ROLES.map((r) => getExternalWorkflowHandle(arrivals[r]!.jobWorkflowId).signal(sessionPhaseSignal, { rolloutId: input.rolloutId, phase })),
    );
    const lost = ROLES.filter((_, i) => results[i]!.status === 'rejected');
    for (const r of lost) state.arrivals[r]!.unreachable = true;
    return lost;
  }

  function lostMessage(lost: PlanActRoleName[], when: string): string {
    return lost.map((r) => `the ${r} job ${arrivals[r]!.jobWorkflowId} stopped running ${when} of rollout ${input.rolloutId}`).join('; ');
  }

  async function deliverAll(): Promise<void> {
    const pending = ROLES.filter((r) => arrivals[r] && !state.arrivals[r]!.delivered && !state.arrivals[r]!.unreachable);
    await Promise.all(
      pending.map(async (role) => {
        const info = state.arrivals[role]!;
        const outcome = state.outcome!;
        // A job that came after the barrier closed gets its own account of why it has no partner.
        const message =
          outcome === 'partner-missing' && missingAtBarrier.includes(role)
            ? `the ${role} job arrived at rollout ${input.rolloutId} after its barrier closed (barrierTimeoutSec=${cfg.rollout.barrierTimeoutSec}); its partner had already gone on alone`
            : state.message;
        const delivery: SessionDelivery = {
          rolloutId: input.rolloutId,
          sessionWorkflowId: self,
          outcome,
          ...(message !== undefined ? { message } : {}),
          episodes: summary?.episodes ?? 0,
          meanReward: summary?.meanReward ?? 0,
          ...(outcome === 'completed' && summary?.samples[role] ? { samples: summary.samples[role] } : {}),
        };
        try {
          await getExternalWorkflowHandle(info.jobWorkflowId).signal(sessionDeliverySignal, delivery);
          info.delivered = true;
        } catch (err) {
          info.unreachable = true;
          log.warn('could not deliver to job', { role, job: info.jobWorkflowId, error: errorMessage(err) });
        }
      }),
    );
  }
}
