/**
 * RL (rl.steps > 0): per step publish the weights, run the rollout kind's rollout on them as child
 * workflows, and train GRPO on its samples; evaluate on held-out RL problems (greedy and sampled)
 * at the start, every eval.rlEverySteps and at the end. One loop; which rollouts run while a step
 * trains is its schedule's (rl-schedules.ts). Every step saves the run state.
 */
import { log, upsertSearchAttributes } from '@temporalio/workflow';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import type { StepRollouts } from '../../src/contracts/training-run';
import type { PolicyRef } from '../../src/contracts/weights';
import { workflowNow } from '../clock';
import { updatePolicy } from '../policy-update';
import { STEP } from '../search-attributes';
import { rlEvaluate } from './evaluations';
import { asynchronousSchedule, synchronousSchedule, type RolloutSchedule } from './rl-schedules';
import type { Run } from './run';
import { stepRecord, type StepScheduleIn, type StepTimes } from './step-record';
import { stepRollouts } from './step-rollouts';

export async function rlPhase(run: Run): Promise<void> {
  const { cfg, state, rlSteps } = run;
  if (rlSteps > 0) {
    if (!state.rlStart) {
      state.rlStart = run.checkpoint;
      // Counted from RL's first step only (a run that began RL on older code reports none).
      state.rlTrainedTokens = 0;
    }
    if (run.rlEvals.length === 0) await rlEvaluate(run, 0);
  }
  const maxStaleness = cfg.rl.async?.maxStaleness ?? 0;
  const rollouts = stepRollouts(run);
  const schedule = maxStaleness === 0 ? synchronousSchedule(rollouts) : asynchronousSchedule(run, rollouts, maxStaleness);
  await rlLoop(run, rollouts.rolloutPolicy, schedule);
  if (rlSteps > 0 && run.rlEvals.at(-1)!.step !== rlSteps) await rlEvaluate(run, rlSteps);
}

/** The RL steps not yet done, on either schedule. */
async function rlLoop(run: Run, rolloutPolicy: () => Promise<{ policy: PolicyRef; tSync: number }>, schedule: RolloutSchedule): Promise<void> {
  for (let rlStep = run.rlDone() + 1; rlStep <= run.rlSteps; rlStep++) {
    run.progress.phase = 'rl';
    const t0 = workflowNow();
    const { policy, tSync } = await rolloutPolicy();
    const t1 = workflowNow();
    const mine = schedule.start(rlStep, policy);
    const back = await mine.done;
    const t2 = workflowNow();
    const { got, schedule: stepSchedule } = schedule.admit(rlStep, policy, mine, back);
    await trainStep(run, rlStep, mine.policy, got, { t0, tSync, t1, t2 }, stepSchedule);
    schedule.trained(t0);
    await afterStep(run, rlStep);
    if (schedule.carry && run.continueAsNewDue()) await schedule.carry();
    await run.maybeContinueAsNew();
  }
}

/** The RL evaluation when one is due, then the saved state. */
async function afterStep(run: Run, rlStep: number): Promise<void> {
  if (run.cfg.eval.rlEverySteps > 0 && rlStep % run.cfg.eval.rlEverySteps === 0 && rlStep < run.rlSteps) await rlEvaluate(run, rlStep);
  await run.save();
}

/** Trains step rlStep on its rollout and records the step: its point, metrics line and progress. */
async function trainStep(run: Run, rlStep: number, policy: PolicyRef, got: StepRollouts, t: Omit<StepTimes, 't3'>, schedule?: StepScheduleIn): Promise<void> {
  const { cfg, state, progress } = run;
  const samples = got.rollouts.flatMap((r) => [r.samples.planner, r.samples.actor, r.samples.single]).filter((s): s is SampleSetRef => s !== undefined);
  const update = await updatePolicy(run.training, {
    runId: run.runId,
    checkpoint: run.checkpoint,
    samples,
    rl: cfg.rl,
    resetOptimizer: rlStep === 1,
    rlStart: state.rlStart!,
    ...(cfg.rl.dynamicSampling.enabled ? { keepGroups: got.keepGroups } : {}),
    ...(schedule ? { policyVersion: state.weights!.version } : {}),
  });
  const t3 = workflowNow();
  const checkpoint = (state.checkpoint = update.checkpoint);
  state.rlSeconds = (state.rlSeconds ?? 0) + (t3 - t.t0) / 1000;
  if (state.rlTrainedTokens !== undefined) state.rlTrainedTokens += update.tokens;
  const { point, line } = stepRecord({ cfg, rlStep, weightVersion: policy.weights.version, got, samples, update, times: { ...t, t3 }, remote: run.remote !== undefined, ...(schedule ? { schedule } : {}) });
  run.rlPoints.push(point);
  state.rlDone = rlStep;
  Object.assign(progress, { phase: 'rl', step: checkpoint.step, lastLoss: update.loss, rlStep, lastReward: point.meanReward, lastAccuracy: point.accuracy, ...(point.schedule ? { lastSchedule: point.schedule } : {}) });
  upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
  await run.metrics([line]);
  log.info('rl step', { step: rlStep, meanReward: point.meanReward, loss: point.loss, seconds: point.seconds, ...(point.schedule ? { staleness: point.schedule.staleness } : {}) });
}
