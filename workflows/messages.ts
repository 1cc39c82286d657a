/**
 * The workflows' messages every process agrees on: queries, signals and updates (Temporal's names
 * for them are recorded in histories, so they never change), and the rollout session's workflow id.
 * Imported by workflows, activities and clients alike, so it holds definitions only.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { RunProgress } from '../src/contracts/training-run';
import type { TreeRolloutState } from '../src/contracts/tree';
import type { Arrival, ArrivalAck, RolloutSessionState, SessionDelivery, SessionPhase } from '../src/contracts/rollout-session';
import type { PlanActJobState } from '../src/contracts/plan-act-job';

export const progressQuery = defineQuery<RunProgress>('progress');

/** A tree rollout's phase and skeleton (node ids, parents, depth, entropy, status, tokens, tool calls). */
export const treeStateQuery = defineQuery<TreeRolloutState>('treeState');

// ---- Plan/Act: rollout session (dual mode) and jobs ----

/** A job registers at the session of its rollout (sent with update-with-start by arriveAtSession). */
export const arriveUpdate = defineUpdate<ArrivalAck, [Arrival]>('arrive');
/** The session's state: who arrived when, phase, outcome, reward summary. */
export const sessionStateQuery = defineQuery<RolloutSessionState>('sessionState');
/** Session -> job: the rollout's outcome and that job's own samples. */
export const sessionDeliverySignal = defineSignal<[SessionDelivery]>('sessionDelivery');
/**
 * Session -> job: phase changes. Also the session's liveness probe: signalling a job that is no
 * longer running fails, which is how the session learns a partner was terminated.
 */
export const sessionPhaseSignal = defineSignal<[{ rolloutId: number; phase: SessionPhase }]>('sessionPhase');
/** A job's progress: phase, current rollout, results so far. */
export const jobStateQuery = defineQuery<PlanActJobState>('jobState');

/** One session per experiment and rollout id, so both jobs of a rollout meet in the same one. */
export function sessionWorkflowId(experiment: string, rolloutId: number): string {
  return `plan-act-session-${experiment}-r${rolloutId}`;
}
