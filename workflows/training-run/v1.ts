/**
 * trainingRun as it was before the 'training-run-v2' patch (SFT, then one GRPO update per RL step,
 * no RL evaluations, records or baseline). Kept only so histories recorded from that code keep
 * replaying: trainingRun runs this when patched('training-run-v2') is false (a run started before
 * the patch). Do not change its commands.
 *
 * Original description: the main job. Prepares the SFT dataset, fits the embedded policy on oracle
 * demonstrations in checkpointed chunks, publishes weights to the inference workers and
 * evaluates on held-out problems; then, with rl.steps > 0 and Plan/Act rollouts, improves it by
 * GRPO (shared-mode rollout child, one update per step). Long runs continue-as-new with their state.
 */
import {
  continueAsNew,
  executeChild,
  log,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunConfigInput } from '../../src/config/schema';
import { activityProxies } from '../activity-proxies';
import { parseConfigOrFail } from '../parse-config';
import { planActRollout } from '../plan-act-rollout';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import type { PolicyRef } from '../../src/contracts/weights';
import { EXPERIMENT, STEP } from '../search-attributes';
import { progressQuery } from '../messages';
import type { EvalPoint, RunProgress, RunState, TrainingRunResult } from '../../src/contracts/training-run';
import type { WeightsInfo } from '../../src/contracts/weights';
import type { RlPointV1 } from '../../src/contracts/training-run';

export async function trainingRunV1(input: RunConfigInput, resume?: RunState): Promise<TrainingRunResult> {
  const cfg = await parseConfigOrFail(input, 'workflow input');
  const { data, training, inference } = activityProxies(cfg.timeouts);
  const runId = workflowInfo().workflowId;
  const state: RunState = resume ?? { losses: [], evals: [] };
  // Was `rollout.kind === 'plan-act' ? rl.steps : 0`; the schema now admits only plan-act.
  const rlSteps = cfg.rl.steps;
  const rlPoints = (state.rl ??= []) as unknown as RlPointV1[];
  const progress: RunProgress = {
    phase: 'prepare',
    step: state.checkpoint?.step ?? 0,
    totalSteps: cfg.sft.steps + rlSteps,
    weightVersion: state.weights?.version ?? 0,
    lastLoss: state.losses.at(-1)?.loss,
    lastEval: state.evals.at(-1),
  };
  setHandler(progressQuery, () => progress);
  upsertSearchAttributes([{ key: EXPERIMENT, value: cfg.experiment }, { key: STEP, value: progress.step }]);

  const dataset = state.dataset ?? (await data.prepareSftDataset({ runId, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq })).ref;
  state.dataset = dataset;
  const init = state.checkpoint ? undefined : await training.initPolicy({ runId, model: cfg.model, seed: cfg.seed });
  state.checkpoint ??= init?.checkpoint;
  let checkpoint = state.checkpoint!;
  const backend = init?.backend ?? 'resumed';

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
    const version = weights.version;
    const report = await inference.evaluatePolicy({
      runId,
      weights,
      task: cfg.task,
      rollout: cfg.rollout,
      seed: cfg.seed,
      maxNewTokens: cfg.eval.maxNewTokens,
    });
    const point: EvalPoint = { ...report, step: checkpoint.step, weightVersion: version };
    state.evals.push(point);
    progress.lastEval = point;
    log.info('evaluation', { step: point.step, planner: point.plannerAccuracy, actor: point.actorAccuracy, episode: point.episodeAccuracy });
    return point;
  };

  if (cfg.eval.everySteps > 0 && state.evals.length === 0 && checkpoint.step === 0 && cfg.sft.steps > 0) await evaluate();

  while (checkpoint.step < cfg.sft.steps) {
    progress.phase = 'sft';
    const toStep = Math.min(cfg.sft.steps, checkpoint.step + cfg.sft.stepsPerActivity);
    const chunk = await training.trainSft({ runId, checkpoint, dataset, toStep, sft: cfg.sft, seed: cfg.seed });
    checkpoint = state.checkpoint = chunk.checkpoint;
    state.losses.push(...chunk.losses);
    Object.assign(progress, { phase: 'sft', step: checkpoint.step, lastLoss: chunk.losses.at(-1)?.loss });
    upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
    log.info('sft chunk', { step: checkpoint.step, loss: progress.lastLoss, tokensPerSec: chunk.tokensPerSec });

    const evalDue = cfg.eval.everySteps > 0 && Math.floor(toStep / cfg.eval.everySteps) > Math.floor((toStep - chunk.losses.length) / cfg.eval.everySteps);
    if (evalDue && checkpoint.step < cfg.sft.steps) await evaluate();
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof trainingRunV1>(cfg, state);
    }
  }

  const lastEvalHere = () => (state.evals.length > 0 && state.evals.at(-1)!.step === checkpoint.step ? state.evals.at(-1) : undefined);
  // A run resumed inside its RL phase already evaluated the end of SFT.
  if (rlPoints.length === 0 && !lastEvalHere()) await evaluate();

  for (let rlStep = rlPoints.length + 1; rlStep <= rlSteps; rlStep++) {
    progress.phase = 'rl';
    const policy: PolicyRef = { weights: await publish() };
    const rollout = await executeChild(planActRollout, {
      workflowId: `${runId}/rollout-${rlStep}`,
      args: [{ runId, rolloutId: rlStep, mode: 'shared', config: cfg, policies: { planner: policy, actor: policy } }],
    });
    const samples = [rollout.samples.planner, rollout.samples.actor].filter((s): s is SampleSetRef => s !== undefined);
    const update = await training.trainGrpo({ runId, checkpoint, samples, step: checkpoint.step + 1, rl: cfg.rl, resetOptimizer: rlStep === 1 });
    checkpoint = state.checkpoint = update.checkpoint;
    const point: RlPointV1 = {
      step: rlStep,
      weightVersion: policy.weights.version,
      meanReward: rollout.meanReward,
      loss: update.loss,
      rows: update.rows,
      skipped: update.skipped,
      clipFraction: update.clipFraction,
    };
    rlPoints.push(point);
    Object.assign(progress, { phase: 'rl', step: checkpoint.step, lastLoss: update.loss, rlStep, lastReward: point.meanReward });
    upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
    log.info('rl step', { ...point });

    if (cfg.eval.everySteps > 0 && rlStep % cfg.eval.everySteps === 0 && rlStep < rlSteps) await evaluate();
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof trainingRunV1>(cfg, state);
    }
  }

  const final = lastEvalHere() ?? (await evaluate());
  progress.phase = 'done';
  // Key order is what the Web UI shows first: the outcome, then the curves.
  return {
    rlEvals: [],
    experiment: cfg.experiment,
    backend,
    sftSteps: checkpoint.step - rlPoints.length,
    rlSteps: rlPoints.length,
    finalLoss: state.losses.at(-1)?.loss,
    final,
    evals: state.evals,
    rl: rlPoints as unknown as TrainingRunResult['rl'],
    checkpoint,
    weights: state.weights,
    losses: state.losses,
  };
}
