/** One GRPO optimiser update of a checkpoint on a rollout's samples. */
import type { Sample } from '../domain/types';
import { Adam } from '../model/adam';
import type { Checkpoint } from '../model/checkpoint';
import { Gpt } from '../model/gpt';
import { trainStep } from '../model/train';
import { buildPgBatch } from './grpo';

export interface GrpoUpdateOptions {
  learningRate: number;
  clipEps: number;
  /** Step number the new checkpoint gets. */
  step: number;
  /**
   * Start Adam afresh: the moments SFT left behind describe cross-entropy gradients, whose scale
   * has nothing to do with the policy gradient's.
   */
  resetOptimizer: boolean;
  /** Bounds peak memory; gradients of the micro-batches are summed into one update. */
  microBatchRows: number;
}

export interface GrpoUpdateResult {
  checkpoint: Checkpoint;
  loss: number;
  rows: number;
  /** Samples of groups whose episodes all earned the same reward (no advantage). */
  skipped: number;
  /** Samples longer than the model's maxSeq, left out. */
  tooLong: number;
  meanReward: number;
  clipFraction: number;
}

export function runGrpoUpdate(ckpt: Checkpoint, samples: readonly Sample[], opts: GrpoUpdateOptions): GrpoUpdateResult {
  const { batch, skipped, tooLong, stats } = buildPgBatch(samples, { maxSeq: ckpt.config.maxSeq, clipEps: opts.clipEps });
  const model = Gpt.fromWeights(ckpt.config, ckpt.weights);
  const optimizer = new Adam(model.params, { lr: opts.learningRate });
  try {
    if (ckpt.optimizer && !opts.resetOptimizer) optimizer.setState(ckpt.optimizer);
    // No rows (every group flat) still yields a checkpoint at this step, so step numbering stays dense.
    const r = batch.tokens.length > 0 ? trainStep(model, batch, optimizer, opts.learningRate, { microBatchRows: opts.microBatchRows }) : undefined;
    if (r && !Number.isFinite(r.loss)) throw new Error(`GRPO loss is ${r.loss} at step ${opts.step}`);
    return {
      checkpoint: { config: ckpt.config, weights: model.getWeights(), optimizer: optimizer.getState(), step: opts.step },
      loss: r?.loss ?? 0,
      rows: batch.tokens.length,
      skipped,
      tooLong,
      meanReward: stats.meanReward,
      clipFraction: r?.clipFraction ?? 0,
    };
  } finally {
    optimizer.dispose();
    model.dispose();
  }
}
