import * as tf from '@tensorflow/tfjs';
import { aggLoss, lossNormOf, type LossNorm } from './agg-loss';
import { actorLoss, DEFAULT_PG_LOSS, sftLoss, type PgLossOptions } from './loss';
import { policyLoss } from './policy-loss';
import type { Adam } from '../model/adam';
import type { Gpt } from '../model/gpt';
import { disposePacked, pack, shifted, targetLogprobs, targetLogprobsAndEntropy } from '../model/logprobs';

export { DEFAULT_PG_LOSS, type PgLossOptions } from './loss';

/**
 * The trainer: packs token rows, runs the model, takes the loss from src/rl/loss.ts and does
 * micro-batching and the optimiser step. One optimisation batch. Every per-token array is aligned with `tokens`: entry t concerns
 * predicting tokens[r][t] from tokens[r][0..t-1], so entry 0 is never trained on.
 */
export interface TrainBatch {
  /** Right-padded token rows (ragged rows are padded internally). */
  tokens: number[][];
  /** 1 = train on predicting this token. */
  lossMask: number[][];
  /** One advantage per row; present = clipped policy-gradient loss, absent = SFT. */
  advantages?: number[];
  /**
   * Per row and position (aligned with lossMask), advantages that replace the row's one; a row
   * whose every trained token has advantage 0 must have advantages[row] 0 (and only then).
   */
  tokenAdvantages?: number[][];
  /**
   * Behaviour-policy logprobs (under the sampling temperature); absent = on-policy: the current
   * logprobs, detached (ratio exactly 1), as verl does with one epoch and one mini-batch.
   */
  oldLogprobs?: number[][];
  /** Reference-policy logprobs (same temperature), needed by the KL loss. */
  refLogprobs?: number[][];
  /** Per-token weights of the policy-gradient loss (off-policy correction, src/rl/off-policy.ts). */
  tokenWeights?: number[][];
}

/** Tokens a batch trains: the loss-masked targets (position 0 is never a target). */
export function trainedTokensOf(batch: Pick<TrainBatch, 'lossMask'>): number {
  return batch.lossMask.reduce((n, row) => n + row.slice(1).filter((m) => m > 0).length, 0);
}


/**
 * Policy-gradient statistics of one step, over every row of the batch given to trainStep (rows
 * skipped in the gradient passes included), before the update.
 */
export interface PgStepStats {
  /** The policy loss alone (aggregated like the total). */
  pgLoss: number;
  /** Share of tokens whose loss the clip changed (verl pg_clipfrac). */
  clipFraction: number;
  /** Share of tokens whose loss the dual clip changed (verl pg_clipfrac_lower). */
  clipFractionLower: number;
  /**
   * Masked mean of old - new logprob (log-ratio clamped as in the loss) over every trained token:
   * verl's actor/ppo_kl of the mini-batch run as one micro-batch (verl averages per-micro-batch means).
   */
  approxKl: number;
  /**
   * aggLoss of the per-token entropy of the (tempered) next-token distributions, in the loss's
   * aggregation mode with the batch's denominators (verl actor/entropy of this batch).
   */
  entropy: number;
  /** aggLoss of the KL estimate, before its coefficient; only with a KL loss. */
  klLoss?: number;
}

export interface TrainStepResult extends Partial<PgStepStats> {
  /** The minimised loss before the update (SFT: masked mean NLL). */
  loss: number;
  /** Tokens that contributed to the loss. */
  tokens: number;
  /** Global gradient norm before clipping. */
  gradNorm: number;
  /** Tokens of the rows that went through the forward and backward passes (all of each row). */
  tokensRun?: number;
  /** Positions those passes computed, padding included (each pass pads its rows to its longest). */
  paddedTokensRun?: number;
  /** Rows with at least one trained token (the seq-mean modes' denominator). */
  seqs?: number;
}

/** Sums over one micro-batch; they add up to the mini-batch's values. */
interface PgSums {
  pgLoss: number;
  klLoss: number;
  clipped: number;
  clippedLower: number;
  /** Σ (old - new logprob) over the trained tokens. */
  approxKl: number;
  /** aggLoss of the entropy with the mini-batch's denominators (shares add up to the mini-batch's). */
  entropy: number;
}

export interface Gradients {
  /** This batch's share of the loss: its per-token losses over the whole batch's denominators. */
  loss: number;
  /** Tokens that contributed to the loss. */
  tokens: number;
  /** Positions the pass computed: rows × the longest row's length. */
  padded?: number;
  /** Policy-gradient batches only: token sums of the statistics, and the batch's loss shares. */
  pg?: PgSums;
  /** d loss / d weight by weight name (weightShapes names); the caller disposes them. */
  grads: tf.NamedTensorMap;
}

/** Tokens the loss is taken over (lossMask entries from t = 1 on). */
export function countLossTokens(batch: TrainBatch): number {
  let n = 0;
  for (const row of batch.lossMask) for (let t = 1; t < row.length; t++) if ((row[t] as number) > 0) n++;
  return n;
}

/** Denominators of `batch` as one mini-batch (entry 0 of each row is never trained). */
export function batchLossNorm(batch: TrainBatch, lossScaleFactor?: number): LossNorm {
  const scale = lossScaleFactor ?? Math.max(1, Math.max(...batch.tokens.map((r) => r.length)) - 1);
  return lossNormOf(
    batch.lossMask.map((r) => r.slice(1)),
    scale,
  );
}

export interface GradientOptions {
  /** Denominators shared by all micro-batches of a mini-batch; default: this batch's own. */
  norm?: LossNorm;
  /** Policy-gradient objective; used when the batch has advantages. Default DEFAULT_PG_LOSS. */
  pg?: PgLossOptions;
}

/**
 * Loss and gradients of one (micro-)batch without updating anything. Every aggregation divides by
 * the shared `norm` of the whole mini-batch, so micro-batch gradients sum exactly to its gradient.
 */
export function computeGradients(model: Gpt, batch: TrainBatch, options: GradientOptions = {}): Gradients {
  const p = pack(batch.tokens, model.config.maxSeq);
  const maskArr = shifted(batch.lossMask, p.rows, p.len);
  const count = maskArr.reduce((a, b) => a + (b > 0 ? 1 : 0), 0);
  if (count === 0 || p.len === 0) {
    disposePacked(p);
    return { loss: 0, tokens: 0, grads: {} };
  }
  const pgOpts = batch.advantages !== undefined ? (options.pg ?? DEFAULT_PG_LOSS) : undefined;
  const norm = options.norm ?? batchLossNorm(batch, pgOpts?.lossScaleFactor);
  const mask = tf.tensor2d(maskArr, [p.rows, p.len]);
  const tensor = (rows: number[][] | undefined): tf.Tensor2D | undefined => (rows ? tf.tensor2d(shifted(rows, p.rows, p.len), [p.rows, p.len]) : undefined);
  const adv = pgOpts
    ? batch.tokenAdvantages
      ? tensor(batch.tokenAdvantages)
      : tf.tensor2d(Float32Array.from(batch.advantages as number[]), [p.rows, 1])
    : undefined;
  const old = pgOpts ? tensor(batch.oldLogprobs) : undefined;
  if (pgOpts?.klLoss && !batch.refLogprobs) throw new Error('the KL loss needs refLogprobs in the batch');
  const ref = pgOpts?.klLoss ? tensor(batch.refLogprobs) : undefined;
  const weights = pgOpts ? tensor(batch.tokenWeights) : undefined;
  let sums: PgSums | undefined;

  const lossFn = (): tf.Scalar => {
    if (!pgOpts || !adv) return sftLoss(targetLogprobs(model, p), mask, norm);
    const { logp, entropy } = targetLogprobsAndEntropy(model, p, pgOpts.temperature);
    // Reading logp back to JS is the stop-gradient tfjs lacks for the on-policy case.
    const behaviour = old ?? tf.tensor2d(logp.dataSync() as Float32Array, [p.rows, p.len]);
    const terms = actorLoss({ logprob: logp, oldLogprob: behaviour, advantages: adv, mask, entropy, ...(ref ? { refLogprob: ref } : {}), ...(weights ? { weights } : {}) }, pgOpts, norm);
    const read = (t: tf.Tensor): number => t.dataSync()[0] as number;
    sums = {
      pgLoss: read(terms.pg.loss),
      klLoss: terms.klLoss ? read(terms.klLoss) : 0,
      clipped: read(terms.pg.clipFrac) * count,
      clippedLower: read(terms.pg.clipFracLower) * count,
      approxKl: read(terms.pg.ppoKl) * count,
      entropy: read(terms.entropy),
    };
    return terms.total;
  };

  const { value, grads } = tf.variableGrads(lossFn, model.variableList);
  const loss = value.dataSync()[0] as number;
  const named: tf.NamedTensorMap = {};
  for (const [name, v] of model.params) {
    const g = grads[v.name];
    if (g) named[name] = g;
  }
  tf.dispose([value, mask, ...[adv, old, ref, weights].filter((t): t is tf.Tensor2D => t !== undefined)]);
  disposePacked(p);
  return { loss, tokens: count, padded: p.rows * p.len, grads: named, ...(sums ? { pg: sums } : {}) };
}

export interface TrainStepOptions {
  /**
   * Rows per forward/backward pass; the gradients of the passes are summed before the single
   * optimiser update, so the result equals one full-batch step with less peak memory.
   */
  microBatchRows?: number;
  /**
   * Cut the micro-batches from the rows sorted by length (ties in batch order), so rows of similar
   * length share a pass and less padding is computed; the sum of the passes' gradients, and so the
   * update, is the same up to float rounding. Default false: the batch's own order.
   */
  byLength?: boolean;
  /** Policy-gradient objective (batches with advantages); default DEFAULT_PG_LOSS. */
  pg?: PgLossOptions;
}

/** One optimiser update: SFT cross-entropy, or the policy-gradient loss when advantages are given. */
export function trainStep(model: Gpt, batch: TrainBatch, optimizer: Adam, lr?: number, options: TrainStepOptions = {}): TrainStepResult {
  const steps = microBatchSteps(model, batch, optimizer, lr, options);
  let r = steps.next();
  while (!r.done) r = steps.next();
  return r.value;
}

/**
 * trainStep that awaits `onMicroBatch` after every forward/backward pass, so a long update can
 * heartbeat and let the event loop run (tfjs work itself is synchronous).
 */
export async function trainStepAsync(
  model: Gpt,
  batch: TrainBatch,
  optimizer: Adam,
  lr: number | undefined,
  options: TrainStepOptions & { onMicroBatch?: (done: number, total: number) => Promise<void> },
): Promise<TrainStepResult> {
  const steps = microBatchSteps(model, batch, optimizer, lr, options);
  let r = steps.next();
  try {
    while (!r.done) {
      await options.onMicroBatch?.(r.value.done, r.value.total);
      r = steps.next();
    }
    return r.value;
  } finally {
    // A throwing callback (e.g. cancellation) leaves the generator suspended: let it free its gradients.
    if (!r.done) steps.return({ loss: 0, tokens: 0, gradNorm: 0 });
  }
}

/** The micro-batch loop of one update; yields after every micro-batch, returns after the update. */
function* microBatchSteps(
  model: Gpt,
  batch: TrainBatch,
  optimizer: Adam,
  lr: number | undefined,
  options: TrainStepOptions,
): Generator<{ done: number; total: number }, TrainStepResult, void> {
  const rows = batch.tokens.length;
  const size = Math.max(1, Math.min(options.microBatchRows ?? rows, rows));
  const pg = batch.advantages !== undefined ? (options.pg ?? DEFAULT_PG_LOSS) : undefined;
  const norm = batchLossNorm(batch, pg?.lossScaleFactor);
  if (norm.tokens === 0) return { loss: 0, tokens: 0, gradNorm: 0 };
  // With no entropy or KL term, a row whose advantage is 0 adds exactly nothing to the gradient
  // (nor to the clip fractions): it still counts in the denominators (norm, over every row), but
  // its forward and backward passes are skipped. Flat GRPO groups are most rows after SFT.
  // The KL and entropy metrics still cover them: a forward pass alone (no tape, no backward).
  const split = pg && pg.entropyCoeff === 0 && !pg.klLoss ? splitZeroAdvantageRows(batch) : { work: batch, skipped: undefined };
  const work = options.byLength ? sortedByLength(split.work) : split.work;
  const skipped = options.byLength && split.skipped ? sortedByLength(split.skipped) : split.skipped;
  const parts = Math.ceil(work.tokens.length / size);
  const metricParts = skipped ? Math.ceil(skipped.tokens.length / size) : 0;
  const total = parts + metricParts;
  let loss = 0;
  let padded = 0;
  let sums: PgSums | undefined;
  let acc: tf.NamedTensorMap = {};
  try {
    for (let i = 0; i < parts; i++) {
      const part = parts === 1 ? work : sliceRows(work, i * size, (i + 1) * size);
      const g = computeGradients(model, part, { norm, ...(pg ? { pg } : {}) });
      loss += g.loss;
      padded += g.padded ?? 0;
      if (g.pg) sums = addSums(sums, g.pg);
      acc = accumulate(acc, g.grads);
      yield { done: i + 1, total };
    }
    // Before the update, so every row's statistics come from the same weights.
    for (let i = 0; i < metricParts && pg && skipped; i++) {
      const m = metricSums(model, sliceRows(skipped, i * size, (i + 1) * size), pg, norm);
      sums = addSums(sums, { pgLoss: 0, klLoss: 0, clipped: 0, clippedLower: 0, ...m });
      yield { done: parts + i + 1, total };
    }
    const gradNorm = optimizer.apply(acc, lr);
    const result: TrainStepResult = { loss, tokens: norm.tokens, gradNorm, tokensRun: work.tokens.reduce((n, row) => n + row.length, 0), paddedTokensRun: padded, seqs: norm.seqs };
    if (sums) {
      Object.assign(result, {
        pgLoss: sums.pgLoss,
        clipFraction: sums.clipped / norm.tokens,
        clipFractionLower: sums.clippedLower / norm.tokens,
        approxKl: sums.approxKl / norm.tokens,
        entropy: sums.entropy,
        ...(pg?.klLoss ? { klLoss: sums.klLoss } : {}),
      } satisfies PgStepStats);
    }
    return result;
  } finally {
    tf.dispose(Object.values(acc));
  }
}

/**
 * The rows to run (those whose advantage is not 0) and the rows skipped; the whole batch and none
 * skipped if that would leave none to run (Adam still steps on momentum).
 */
function splitZeroAdvantageRows(batch: TrainBatch): { work: TrainBatch; skipped: TrainBatch | undefined } {
  const keep = (batch.advantages ?? []).flatMap((a, i) => (a !== 0 ? [i] : []));
  if (keep.length === batch.tokens.length || keep.length === 0) return { work: batch, skipped: undefined };
  const drop = batch.tokens.flatMap((_, i) => (batch.advantages![i] === 0 ? [i] : []));
  return { work: pickRows(batch, keep), skipped: pickRows(batch, drop) };
}

/** The batch's rows shortest first, ties in their order (TrainStepOptions.byLength). */
function sortedByLength(batch: TrainBatch): TrainBatch {
  return pickRows(batch, rowsByLength(batch.tokens));
}

/** Indices of the rows, shortest first, ties in their order. */
export function rowsByLength(rows: readonly (readonly number[])[]): number[] {
  return rows.map((_, i) => i).sort((a, b) => rows[a]!.length - rows[b]!.length || a - b);
}

function pickRows(batch: TrainBatch, rows: readonly number[]): TrainBatch {
  const pick = <T>(xs: T[] | undefined): T[] | undefined => xs && rows.map((i) => xs[i]!);
  const out: TrainBatch = { ...batch, tokens: pick(batch.tokens)!, lossMask: pick(batch.lossMask)! };
  if (batch.advantages) out.advantages = pick(batch.advantages)!;
  if (batch.tokenAdvantages) out.tokenAdvantages = pick(batch.tokenAdvantages)!;
  if (batch.oldLogprobs) out.oldLogprobs = pick(batch.oldLogprobs)!;
  if (batch.tokenWeights) out.tokenWeights = pick(batch.tokenWeights)!;
  if (batch.refLogprobs) out.refLogprobs = pick(batch.refLogprobs)!;
  return out;
}

/**
 * The KL and entropy metric sums of rows left out of the gradient passes, from a forward pass
 * alone (no tape, no backward), with the mini-batch's denominators `norm`. On-policy (no
 * oldLogprobs) old - new is exactly 0, as in computeGradients, so only the entropy is computed.
 */
function metricSums(model: Gpt, batch: TrainBatch, pg: PgLossOptions, norm: LossNorm): { approxKl: number; entropy: number } {
  const p = pack(batch.tokens, model.config.maxSeq);
  try {
    const maskArr = shifted(batch.lossMask, p.rows, p.len);
    const count = maskArr.reduce((a, b) => a + (b > 0 ? 1 : 0), 0);
    if (count === 0 || p.len === 0) return { approxKl: 0, entropy: 0 };
    const [kl, entropy] = tf.tidy(() => {
      const mask = tf.tensor2d(maskArr, [p.rows, p.len]);
      const { logp, entropy } = targetLogprobsAndEntropy(model, p, pg.temperature);
      const ent = aggLoss(entropy, mask, pg.aggMode, norm);
      if (!batch.oldLogprobs) return [tf.scalar(0), ent];
      // policyLoss's own ppoKl, so the clamp is the loss's; the advantages (0) do not enter it.
      const old = tf.tensor2d(shifted(batch.oldLogprobs, p.rows, p.len), [p.rows, p.len]);
      const out = policyLoss({ logprob: logp, oldLogprob: old, advantages: tf.zeros([p.rows, 1]) as tf.Tensor2D, mask, clip: { clipLow: pg.clipLow, clipHigh: pg.clipHigh, dualClipC: pg.dualClipC }, aggMode: pg.aggMode, norm });
      return [out.ppoKl, ent];
    });
    const read = (t: tf.Tensor): number => {
      const v = t.dataSync()[0] as number;
      t.dispose();
      return v;
    };
    return { approxKl: read(kl!) * count, entropy: read(entropy!) };
  } finally {
    disposePacked(p);
  }
}

function addSums(a: PgSums | undefined, b: PgSums): PgSums {
  if (!a) return { ...b };
  return {
    pgLoss: a.pgLoss + b.pgLoss,
    klLoss: a.klLoss + b.klLoss,
    clipped: a.clipped + b.clipped,
    clippedLower: a.clippedLower + b.clippedLower,
    approxKl: a.approxKl + b.approxKl,
    entropy: a.entropy + b.entropy,
  };
}

function sliceRows(batch: TrainBatch, from: number, to: number): TrainBatch {
  const out: TrainBatch = { tokens: batch.tokens.slice(from, to), lossMask: batch.lossMask.slice(from, to) };
  if (batch.advantages) out.advantages = batch.advantages.slice(from, to);
  if (batch.tokenAdvantages) out.tokenAdvantages = batch.tokenAdvantages.slice(from, to);
  if (batch.oldLogprobs) out.oldLogprobs = batch.oldLogprobs.slice(from, to);
  if (batch.tokenWeights) out.tokenWeights = batch.tokenWeights.slice(from, to);
  if (batch.refLogprobs) out.refLogprobs = batch.refLogprobs.slice(from, to);
  return out;
}

/** Sums `next` into `acc`, disposing what is no longer needed. */
function accumulate(acc: tf.NamedTensorMap, next: tf.NamedTensorMap): tf.NamedTensorMap {
  if (Object.keys(acc).length === 0) return next;
  for (const [name, g] of Object.entries(next)) {
    const prev = acc[name];
    acc[name] = prev ? tf.add(prev, g) : g;
    if (prev) tf.dispose([prev, g]);
  }
  return acc;
}

// Kept here too: callers think of recomputing logprobs as part of training.
export { sequenceLogprobs } from '../model/logprobs';
