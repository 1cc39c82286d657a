/**
 * The two schedules of the RL loop (rl-loop.ts): which steps' rollouts run while a step trains.
 *  - synchronous (rl.async absent): publish → rollout → train, one after another;
 *  - asynchronous (rl.async.maxStaleness k, docs/async-rl.md): while step N trains, the rollouts of
 *    steps N+1 … N+k run as child workflows on the newest weights published when each started.
 *    Everything is in the workflow's history: a crash of a worker or of the server loses and repeats
 *    nothing; rollouts in flight at a continue-as-new finish first and travel in the state.
 */
import { log } from '@temporalio/workflow';
import type { StepRollouts } from '../../src/contracts/training-run';
import type { PolicyRef } from '../../src/contracts/weights';
import { stepsToLaunch, type RolloutInterval } from '../../src/rl/schedule';
import { workflowNow } from '../clock';
import type { Run } from './run';
import type { StepScheduleIn } from './step-record';
import type { StepRolloutRunner } from './step-rollouts';

/** A step's rollout on its way: the policy it runs on, and its result. */
export interface RolloutInFlight {
  policy: PolicyRef;
  done: Promise<StepRollouts>;
}

export interface RolloutSchedule {
  /** Starts step rlStep's rollout (and those that run while it trains) on `policy`, the newest weights; returns step rlStep's. */
  start(rlStep: number, policy: PolicyRef): RolloutInFlight;
  /** Step rlStep's rollout is back (newest: the newest weights): what the step trains, and its schedule for the record. */
  admit(rlStep: number, newest: PolicyRef, mine: RolloutInFlight, got: StepRollouts): { got: StepRollouts; schedule?: StepScheduleIn };
  /** The step trained (t0: when it began). */
  trained(t0: number): void;
  /** A continue-as-new is due: rollouts in flight finish first and travel in the state. */
  carry?(): Promise<void>;
}

/** Synchronous: each step's rollout starts when the step does, on the weights it trains. */
export function synchronousSchedule(rollouts: StepRolloutRunner): RolloutSchedule {
  return {
    start: (rlStep, policy) => ({ policy, done: rollouts.runRollouts(rlStep, policy) }),
    admit: (_rlStep, _newest, _mine, got) => ({ got }),
    trained: () => undefined,
  };
}

/** Asynchronous: up to maxStaleness steps' rollouts ahead of the step training, never more versions behind. */
export function asynchronousSchedule(run: Run, rollouts: StepRolloutRunner, maxStaleness: number): RolloutSchedule {
  const { state } = run;
  const inflight = new Map<number, RolloutInFlight & { interval: RolloutInterval }>();
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
    const done = rollouts.runRollouts(step, policy).then((got) => {
      interval.ended = workflowNow();
      return got;
    });
    // Awaited when its step trains; a failure fails the run there.
    done.catch(() => undefined);
    inflight.set(step, { policy, interval, done });
  };
  return {
    start(rlStep, policy) {
      for (const s of stepsToLaunch(rlStep, run.rlSteps, maxStaleness)) if (!inflight.has(s)) launch(s, policy);
      return inflight.get(rlStep)!;
    },
    admit(rlStep, newest, mine, got) {
      inflight.delete(rlStep);
      // Never more than maxStaleness versions behind (the schedule guarantees it; a violation is
      // recorded and its samples left untrained, not trained off-policy beyond the bound).
      const behind = newest.weights.version - mine.policy.weights.version;
      const droppedStale = behind > maxStaleness ? got.rollouts.reduce((n, r) => n + r.episodes, 0) : 0;
      if (droppedStale > 0) {
        log.warn('rollout too stale: not trained', { rlStep, behind, maxStaleness, episodes: droppedStale });
        got = { rollouts: got.rollouts.map((r) => ({ ...r, samples: {} })), keepGroups: got.keepGroups };
      }
      return { got, schedule: { maxStaleness, droppedStale, intervals } };
    },
    trained(t0) {
      // Intervals that ended before this step began matter no more.
      intervals.splice(0, intervals.length, ...intervals.filter((i) => i.ended === undefined || i.ended > t0));
    },
    async carry() {
      state.pendingRollouts = [];
      for (const [step, l] of inflight) state.pendingRollouts.push({ step, policy: l.policy, got: await l.done, started: l.interval.started, ended: l.interval.ended ?? workflowNow() });
    },
  };
}
