/**
 * trainingRun's evaluations of its latest weights: on the SFT distribution (the SFT curve, and once
 * more at the end: did RL keep what SFT taught?) and on the RL distribution (the kind's own
 * evaluation, greedy and sampled: at RL's start, every eval.rlEverySteps and at its end).
 */
import { log } from '@temporalio/workflow';
import type { EvalPoint, RlEvalPoint } from '../../src/contracts/training-run';
import type { WeightsInfo } from '../../src/contracts/weights';
import type { HorizonSuccess } from '../../src/horizon/metrics';
import { ROLLOUT_KINDS, type RlEvaluation } from '../rollout-kinds';
import type { Run } from './run';

/** Held-out accuracy on the SFT distribution of the latest checkpoint. */
export async function evaluate(run: Run): Promise<EvalPoint> {
  const { cfg, state, progress } = run;
  progress.phase = 'eval';
  const weights = await run.publish();
  const report = await run.inference.evaluatePolicy({
    runId: run.runId,
    weights,
    task: cfg.task,
    rollout: cfg.rollout,
    seed: cfg.seed,
    maxNewTokens: cfg.eval.maxNewTokens,
    ...(cfg.horizon ? { horizon: cfg.horizon } : {}),
  });
  const point: EvalPoint = { ...report, step: run.checkpoint.step, weightVersion: weights.version };
  state.evals.push(point);
  progress.lastEval = point;
  // The SFT curve's points; the check after RL (SFT distribution, after RL's steps) is in the result only.
  if (run.rlDone() === 0) await run.metrics([{ kind: 'eval', phase: 'sft', step: point.step, greedyAccuracy: point.episodeAccuracy, ...horizonRates(point.byHorizon) }]);
  log.info('evaluation', { step: point.step, planner: point.plannerAccuracy, actor: point.actorAccuracy, episode: point.episodeAccuracy });
  return point;
}

/** The last SFT-distribution evaluation when it is of the latest checkpoint. */
export function lastEvalHere(run: Run): EvalPoint | undefined {
  const { evals } = run.state;
  return evals.length > 0 && evals.at(-1)!.step === run.checkpoint.step ? evals.at(-1) : undefined;
}

/** Held-out accuracy on the RL distribution, greedy and sampled, of the given weights (the kind's own evaluation). */
export function evaluateRl(run: Run): (weights: WeightsInfo) => Promise<RlEvaluation> {
  return (weights) => ROLLOUT_KINDS[run.cfg.rollout.kind].evaluate(run.cfg, weights);
}

/** The RL curve's point at RL step rlStep: the latest weights on the RL distribution. */
export async function rlEvaluate(run: Run, rlStep: number): Promise<RlEvalPoint> {
  run.progress.phase = 'eval';
  const weights = await run.publish();
  const point: RlEvalPoint = { step: rlStep, weightVersion: weights.version, ...(await evaluateRl(run)(weights)) };
  run.rlEvals.push(point);
  run.progress.lastRlEval = point;
  await run.metrics([
    { kind: 'eval', phase: 'rl', step: rlStep, greedyAccuracy: point.greedy.accuracy, ...(point.sampled ? { sampledAccuracy: point.sampled.accuracy } : {}), ...horizonRates(point.byHorizon) },
  ]);
  log.info('rl evaluation', { rlStep, greedy: point.greedy.accuracy, sampled: point.sampled?.accuracy });
  return point;
}

/** Greedy success rate per plan horizon for a metrics line, e.g. { byHorizon: { "5": 0.6 } }; nothing for arithmetic. */
function horizonRates(rows: HorizonSuccess[] | undefined): { byHorizon?: Record<string, number> } {
  return rows ? { byHorizon: Object.fromEntries(rows.map((r) => [String(r.horizon), r.rate])) } : {};
}
