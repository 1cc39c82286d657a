/**
 * The baselines trainingRun compares RL with (compare.*), each from the checkpoint RL started from
 * and under a run key of its own, so its checkpoints never mix with the run's:
 *  - more SFT on the same demonstrations, and SFT on the filtered (tool-using) demonstrations, for
 *    a fixed number of sequences or RL's trained tokens (compare.sftBudget) or, as runs recorded
 *    before it, RL's wall time;
 *  - rejection-sampling fine-tuning: RL's steps, prompts and rollouts, fitting the correct episodes.
 * Every activity is named by the branch and step, so a resumed run reuses what was done.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { RunConfig } from '../src/config/schema';
import type { BlobRef } from '../src/domain/types';
import type { SftBaseline, RftBaseline, RftProgress, RlEvalPoint } from '../src/contracts/training-run';
import type { SampleSetRef } from '../src/contracts/sample-set';
import type { RftStepMetrics } from '../src/report/run-metrics';
import type { CheckpointInfo, LossPoint, WeightsInfo } from '../src/contracts/weights';
import { activityProxies } from './activity-proxies';
import { mean } from './web-ui-format';
import { workflowNow } from './clock';
import { updatePolicy } from './policy-update';
import { ROLLOUT_KINDS, type RlEvaluation } from './rollout-kinds';

export const MORE_SFT_SUFFIX = '~more-sft';
export const FILTERED_SFT_SUFFIX = '~filtered-sft';
export const RFT_SUFFIX = '~rft';
/** The checkpoint RL started from, published once more for the test evaluation. */
export const SFT_ONLY_SUFFIX = '~sft-only';

/** The weights of some checkpoint evaluated on the validation problems. */
type EvaluateRl = (weights: WeightsInfo) => Promise<RlEvaluation>;

/** What RL spent, which an SFT baseline's budget may be set to. */
export interface RlSpent {
  seconds: number;
  /**
   * Loss-masked tokens of RL's training batches, each batch's once (not once per epoch); rows of a
   * flat group (advantage 0) count, as they do in the loss's denominator. Absent when not counted
   * from RL's first step (a run that began RL on code before the count).
   */
  trainedTokens?: number;
}

/**
 * SFT chunks from `start` on `dataset` until the budget is spent: compare.sftBudget's sequences
 * (whole steps of sft.batchSize, in chunks of sft.stepsPerActivity), RL's trained tokens (exactly:
 * the step that reaches them trains only what is left, src/sft/sft.ts), or RL's seconds (workflow
 * time around each chunk, so it replays identically). The learning rate and batches continue SFT's schedule from start's step (past its
 * end: its floor, 10%). Then the validation evaluation.
 */
export async function sftBaseline(
  cfg: RunConfig,
  branchSuffix: string,
  start: CheckpointInfo,
  dataset: BlobRef,
  rl: RlSpent,
  evaluateRl: EvaluateRl,
  /** Each chunk's losses (a tracked run's child run logs them). */
  onLosses?: (losses: LossPoint[]) => void,
): Promise<SftBaseline> {
  const { training } = activityProxies(cfg.timeouts, cfg.trainer);
  const branch = `${workflowInfo().workflowId}${branchSuffix}`;
  const budget = cfg.compare.sftBudget;
  const lastStep = typeof budget === 'object' ? start.step + Math.ceil(budget.sequences / cfg.sft.batchSize) : Infinity;
  if (budget === 'rl-trained-tokens' && rl.trainedTokens === undefined) {
    throw ApplicationFailure.nonRetryable("compare.sftBudget rl-trained-tokens: RL's trained tokens were not counted from its first step (this run began RL on code before the count); use { sequences: N }", 'BadInputError');
  }
  const tokenBudget = budget === 'rl-trained-tokens' ? rl.trainedTokens : undefined;
  let checkpoint = start;
  let seconds = 0;
  let trainedTokens = 0;
  const spent = (): boolean => {
    if (budget === 'rl-wall-time') return seconds >= rl.seconds;
    if (tokenBudget !== undefined) return trainedTokens >= tokenBudget;
    return checkpoint.step >= lastStep;
  };
  while (!spent()) {
    const t0 = workflowNow();
    const chunk = await training.trainSft({
      runId: branch,
      checkpoint,
      dataset,
      toStep: Math.min(lastStep, checkpoint.step + cfg.sft.stepsPerActivity),
      sft: cfg.sft,
      seed: cfg.seed,
      ...(tokenBudget !== undefined ? { maxTrainedTokens: tokenBudget - trainedTokens } : {}),
    });
    seconds += (workflowNow() - t0) / 1000;
    // A chunk of a dataset with no trained token would never spend a token budget.
    if (tokenBudget !== undefined && !chunk.trainedTokens) throw ApplicationFailure.nonRetryable("the SFT baseline's demonstrations train no token: compare.sftBudget rl-trained-tokens cannot be spent", 'BadInputError');
    trainedTokens += chunk.trainedTokens ?? 0;
    checkpoint = chunk.checkpoint;
    onLosses?.(chunk.losses);
  }
  const weights = await training.publishWeights({ runId: branch, checkpoint, version: 0 });
  const evalPoint: RlEvalPoint = { step: 0, weightVersion: 0, ...(await evaluateRl(weights)) };
  const steps = checkpoint.step - start.step;
  const sequences = steps * cfg.sft.batchSize;
  if (budget === 'rl-wall-time') return { steps, seconds, budgetSeconds: rl.seconds, eval: evalPoint, weights };
  if (tokenBudget !== undefined) return { steps, sequences, trainedTokens, budgetTokens: tokenBudget, seconds, eval: evalPoint, weights };
  return { steps, sequences, seconds, eval: evalPoint, weights };
}

/** Hooks of the run an RFT baseline saves its progress and writes its metrics through. */
export interface RftHooks {
  progress?: RftProgress;
  saveProgress(p: RftProgress): Promise<void>;
  metrics(line: RftStepMetrics): Promise<unknown>;
}

/**
 * Rejection-sampling fine-tuning (RAFT++) on RL's budget: at each of rl.steps steps, the rollout
 * kind plays the step's prompts (the same as RL's step: they are seeded by the run seed and step)
 * groupSize times with the baseline's current weights, and the update fits the samples of the
 * correct episodes with advantage 1, the clipped loss and rl's optimiser settings (the learning rate
 * compare.rftLearningRate when given).
 */
export async function rftBaseline(cfg: RunConfig, start: CheckpointInfo, evaluateRl: EvaluateRl, hooks: RftHooks): Promise<RftBaseline> {
  const { training } = activityProxies(cfg.timeouts, cfg.trainer);
  const branch = `${workflowInfo().workflowId}${RFT_SUFFIX}`;
  const kind = ROLLOUT_KINDS[cfg.rollout.kind];
  // compare.rftLearningRate, when given, replaces RL's rate for this baseline only (absent in runs recorded before it).
  const rl = cfg.compare.rftLearningRate === undefined ? cfg.rl : { ...cfg.rl, learningRate: cfg.compare.rftLearningRate };
  let p: RftProgress = hooks.progress ?? { step: 0, checkpoint: start, episodes: 0, trainedSamples: 0, seconds: 0 };
  while (p.step < cfg.rl.steps) {
    const step = p.step + 1;
    const t0 = workflowNow();
    const weights = await training.publishWeights({ runId: branch, checkpoint: p.checkpoint, version: p.step });
    const rollout = await kind.run({ runId: branch, rlStep: step, batch: 0, config: cfg, policy: { weights } });
    const samples = [rollout.samples.planner, rollout.samples.actor, rollout.samples.single].filter((s): s is SampleSetRef => s !== undefined);
    const update = await updatePolicy(training, { runId: branch, checkpoint: p.checkpoint, samples, rl, resetOptimizer: step === 1, rlStart: start, objective: 'rft' });
    p = {
      step,
      checkpoint: update.checkpoint,
      episodes: p.episodes + rollout.rows.length,
      trainedSamples: p.trainedSamples + update.rows,
      seconds: p.seconds + (workflowNow() - t0) / 1000,
    };
    const rewards = rollout.rows.map((r) => r.reward);
    await hooks.metrics({ step, meanReward: mean(rewards), accuracy: rewards.length === 0 ? 0 : rewards.filter((r) => r > 0).length / rewards.length, trainedSamples: update.rows, loss: update.loss });
    await hooks.saveProgress(p);
  }
  const weights = await training.publishWeights({ runId: branch, checkpoint: p.checkpoint, version: p.step });
  const evalPoint: RlEvalPoint = { step: p.step, weightVersion: weights.version, ...(await evaluateRl(weights)) };
  return { steps: p.step, episodes: p.episodes, trainedSamples: p.trainedSamples, seconds: p.seconds, eval: evalPoint, weights };
}
