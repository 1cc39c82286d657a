/**
 * updatePolicy: one policy-gradient update of a checkpoint on a rollout's samples, as verl's actor
 * update (verl/workers/actor/dp_actor.py update_policy): ppoEpochs passes over the rollout, each
 * split into miniBatches optimiser steps, each step accumulated over micro-batches. The objective is
 * GRPO's, or RFT's (objective 'rft': only the correct episodes). One name along the chain: a
 * workflow's updatePolicy (workflows/policy-update.ts) schedules the trainGrpo activity
 * (activities/training.ts; its registered name predates RFT and stays, since recorded histories and
 * the torch worker know it), which runs this.
 */
import type { RunConfig } from '../config/schema';
import type { Sample } from '../domain/types';
import { logprobTemperature } from '../engine/sampling';
import { Adam } from '../model/adam';
import type { Checkpoint } from '../model/checkpoint';
import { Gpt } from '../model/gpt';
import { mixSeed, mulberry32 } from '../domain/rng';
import { rowsByLength, sequenceLogprobs, trainedTokensOf, trainStepAsync, type PgLossOptions, type TrainBatch } from './trainer';
import { stalenessHistogram } from './off-policy';
import { buildPgBatch } from './grpo';
import type { SampleCredit } from '../contracts/rollout-record';

export type RlConfig = RunConfig['rl'];

export interface PolicyUpdateProgress {
  phase: 'reference' | 'proximal' | 'update';
  /** Reference and proximal: rows scored so far; update: optimiser steps finished. */
  done: number;
  total: number;
  /** Update phase: micro-batches finished within the current optimiser step. */
  microBatch?: number;
  microBatches?: number;
}

export interface PolicyUpdateOptions {
  rl: RlConfig;
  /** Step number the new checkpoint gets. */
  step: number;
  /**
   * Start Adam afresh: the moments SFT left behind describe cross-entropy gradients, whose scale
   * has nothing to do with the policy gradient's.
   */
  resetOptimizer: boolean;
  /** Bounds peak memory; gradients of the micro-batches are summed into one update. */
  microBatchRows: number;
  /**
   * Micro-batches (and the reference and proximal scoring passes) cut from rows sorted by length:
   * less padding, the same update up to float rounding (rl.microBatch.byLength). Default false.
   */
  byLength?: boolean;
  /** Seeds the mini-batch shuffle: the same seed gives the same bytes (a retried activity). */
  seed: number;
  /** The frozen policy RL started from; required by useKlLoss and useKlInReward. */
  reference?: Checkpoint;
  /** Awaited between micro-batches and reference chunks: heartbeats, cancellation, event loop. */
  onProgress?: (p: PolicyUpdateProgress) => Promise<void>;
  /**
   * Asynchronous RL: the version of the weights being trained (the checkpoint's). Samples from older
   * versions are corrected as rl.async.correction says, and the staleness histogram is reported.
   */
  policyVersion?: number;
  /** rft: fit only the correct episodes (compare.rft, src/rl/grpo.ts buildPgBatch); default grpo. */
  objective?: 'grpo' | 'rft';
}

export interface PolicyUpdateResult {
  checkpoint: Checkpoint;
  /** Per sample, in input order: its advantage and whether it was trained (for the rollout record, not the history). */
  perSample: SampleCredit[];
  /** With policyVersion: samples per staleness (versions behind the trained weights), counted from a sample's oldest call. */
  staleness?: Record<string, number>;
  /** With policyVersion: samples whose calls ran on more than one weight version (partial rollouts). */
  partialSamples?: number;
  /** With an off-policy correction: trained tokens whose weight the cap changed, and the mean weight. */
  offPolicyCapped?: number;
  offPolicyMeanWeight?: number;
  /** Minimised loss (pg loss - entropyCoeff·entropy + klLossCoef·KL loss), mean over optimiser steps. */
  loss: number;
  /** Policy loss alone, mean over optimiser steps (verl actor/pg_loss). */
  pgLoss: number;
  /** Share of trained tokens whose loss the clip changed, over all steps (verl actor/pg_clipfrac). */
  pgClipFrac: number;
  /** Same share for the dual clip (verl actor/pg_clipfrac_lower). */
  pgClipFracLower: number;
  /**
   * verl actor/ppo_kl: per optimiser step the masked mean of old - new logprob over every trained
   * token of its mini-batch (zero-advantage rows included), then the mean over steps (verl's
   * reduce_metrics over mini-batches and epochs). verl averages per-micro-batch means within a
   * mini-batch; this is its value with one micro-batch per mini-batch (the same when micro-batches
   * hold equal token counts), so it does not depend on microBatchRows.
   */
  approxKl: number;
  /**
   * verl actor/entropy: aggLoss (rl.lossAggMode, its loss_scale_factor) of the per-token entropy of
   * the tempered next-token distributions over every row of the rollout, each row counted once:
   * the first epoch's steps combined with their denominators (tokens; rows with a trained token in
   * the seq-mean modes). verl takes it from the pre-update policy in its old-log-prob pass; here a
   * row is scored by the weights its own first-epoch step starts from, the same with one mini-batch.
   */
  entropy: number;
  /** Pre-clip gradient norm: mean over optimiser steps with a finite norm, and the last step's. */
  gradNorm: number;
  gradNormLast: number;
  /** KL-loss estimate before its coefficient, mean over steps (useKlLoss only; verl actor/kl_loss). */
  klLoss?: number;
  /**
   * useKlInReward only, verl actor/reward_kl_penalty: the mean over samples of each sample's mean
   * per-token KL of behaviour vs reference (0 for a sample with no trained token).
   */
  rewardKlPenalty?: number;
  optimizerSteps: number;
  /** Steps skipped because the gradient norm was not finite (verl skips them too). */
  nonFiniteGradSteps: number;
  /** Trained tokens in the rollout's batch (each counted once, not once per epoch). */
  tokens: number;
  /** Training rows (samples) in the batch. */
  rows: number;
  /** Mean response length (tokens) of the rows. */
  meanResponseLength: number;
  /** Tokens through the forward and backward passes over all optimiser steps, and the seconds they took. */
  tokensRun: number;
  /** The positions those passes computed, padding included (rl.microBatch.byLength lowers it). */
  paddedTokensRun: number;
  updateSeconds: number;
  /** Samples with no trained token (empty or fully masked response), left out: they add nothing. */
  skipped: number;
  /** Samples longer than the model's maxSeq, left out. */
  tooLong: number;
  /** objective rft: samples of episodes without reward, left out. */
  rejected?: number;
  meanReward: number;
  groups: number;
  /** Groups whose episodes all scored the same: kept with advantage 0. */
  flatGroups: number;
  /** Same as pgClipFrac (the run's RlPoint reads this name). */
  clipFraction: number;
}

/** verl's loss, from the run config. */
export function pgLossOptions(rl: RlConfig): PgLossOptions {
  return {
    // Unset bounds fall back to clipEps. verl's actor.yaml sets clip_ratio_low/high to 0.2
    // themselves, so there changing clip_ratio alone does not move the vanilla loss's bounds.
    clipLow: rl.clipEpsLow ?? rl.clipEps,
    clipHigh: rl.clipEpsHigh ?? rl.clipEps,
    dualClipC: rl.dualClipC,
    aggMode: rl.lossAggMode,
    // verl's default divisor is the padded response width, i.e. the longest response allowed.
    lossScaleFactor: rl.lossScaleFactor ?? rl.maxNewTokens,
    temperature: logprobTemperature(rl.temperature),
    entropyCoeff: rl.entropyCoeff,
    ...(rl.useKlLoss ? { klLoss: { coef: rl.klLossCoef, kind: rl.klLossType } } : {}),
  };
}

const REFERENCE_CHUNK_ROWS = 16;

export async function updatePolicy(ckpt: Checkpoint, samples: readonly Sample[], opts: PolicyUpdateOptions): Promise<PolicyUpdateResult> {
  const { rl } = opts;
  const pg = pgLossOptions(rl);
  const progress = opts.onProgress ?? (async () => {});
  const byLength = opts.byLength ?? false;
  const refLogprobs = rl.useKlLoss || rl.useKlInReward ? await referenceLogprobs(ckpt, samples, requireReference(ckpt, opts.reference), pg.temperature, progress, 'reference', byLength) : undefined;
  const correction = rl.async && rl.async.maxStaleness > 0 && opts.policyVersion !== undefined ? rl.async.correction : 'none';
  // π_prox: the policy as this update starts, scored on every sample (what the ratio is taken against).
  const prox = correction !== 'none' ? await referenceLogprobs(ckpt, samples, ckpt, pg.temperature, progress, 'proximal', byLength) : undefined;
  const built = buildPgBatch(samples, {
    maxSeq: ckpt.config.maxSeq,
    normAdvByStd: rl.normAdvByStd,
    epsilon: rl.advEpsilon,
    ...(rl.useKlInReward && refLogprobs ? { klInReward: { coef: rl.klRewardCoef, kind: rl.klPenalty, refLogprobs } } : {}),
    ...(rl.useKlLoss && refLogprobs ? { refLogprobs } : {}),
    ...(prox && correction !== 'none' ? { offPolicy: { prox, mode: correction, cap: rl.async!.isCap } } : {}),
    ...(opts.objective === 'rft' ? { objective: 'rft' as const } : {}),
    // Absent in configs recorded before the key.
    ...(rl.advantageNorm === 'role' ? { advantageNorm: 'role' as const } : {}),
  });
  const { batch, stats } = built;
  const rows = batch.tokens.length;
  // verl's on-policy case (one epoch, one mini-batch): old logprobs are the current ones,
  // detached, so the ratio is exactly 1. Otherwise they are the engine's (the sampling policy's).
  const onPolicy = rl.ppoEpochs === 1 && rl.miniBatches === 1;

  const model = Gpt.fromWeights(ckpt.config, ckpt.weights);
  const optimizer = new Adam(model.params, { lr: rl.learningRate, clipNorm: rl.gradClip });
  try {
    if (ckpt.optimizer && !opts.resetOptimizer) {
      optimizer.setState({ ...ckpt.optimizer, config: { ...ckpt.optimizer.config, clipNorm: rl.gradClip } });
    }
    const started = performance.now();
    const acc = { tokensRun: 0, paddedTokensRun: 0, steps: 0, loss: 0, pgLoss: 0, klLoss: 0, gradNorm: 0, finiteNorms: 0, gradNormLast: 0, nonFinite: 0, tokens: 0, clipped: 0, clippedLower: 0, approxKl: 0, entropy: 0, entropyWeight: 0 };
    const plan: number[][][] = [];
    for (let epoch = 0; epoch < rl.ppoEpochs && rows > 0; epoch++) {
      plan.push(miniBatchRows(built.rowGroups, rl.miniBatches, mulberry32(mixSeed(opts.seed, epoch))));
    }
    const total = plan.reduce((n, parts) => n + parts.length, 0);
    for (const [epoch, parts] of plan.entries()) {
      for (const part of parts) {
        const sub = selectRows(batch, part, onPolicy);
        const r = await trainStepAsync(model, sub, optimizer, rl.learningRate, {
          microBatchRows: opts.microBatchRows,
          byLength,
          pg,
          onMicroBatch: (microBatch, microBatches) => progress({ phase: 'update', done: acc.steps, total, microBatch, microBatches }),
        });
        if (!Number.isFinite(r.loss)) throw new Error(`GRPO loss is ${r.loss} at step ${opts.step}`);
        acc.steps++;
        acc.tokensRun += r.tokensRun ?? 0;
        acc.paddedTokensRun += r.paddedTokensRun ?? 0;
        acc.loss += r.loss;
        acc.pgLoss += r.pgLoss ?? 0;
        acc.klLoss += r.klLoss ?? 0;
        acc.gradNormLast = r.gradNorm;
        if (Number.isFinite(r.gradNorm)) {
          acc.gradNorm += r.gradNorm;
          acc.finiteNorms++;
        } else acc.nonFinite++;
        acc.tokens += r.tokens;
        acc.clipped += (r.clipFraction ?? 0) * r.tokens;
        acc.clippedLower += (r.clipFractionLower ?? 0) * r.tokens;
        acc.approxKl += r.approxKl ?? 0;
        if (epoch === 0 && r.entropy !== undefined) {
          // Weighted by its denominator, the first epoch's steps add up to aggLoss over the whole rollout.
          const weight = pg.aggMode === 'token-mean' ? r.tokens : (r.seqs ?? 0);
          acc.entropy += r.entropy * weight;
          acc.entropyWeight += weight;
        }
      }
    }
    const perStep = (x: number): number => (acc.steps === 0 ? 0 : x / acc.steps);
    const perToken = (x: number): number => (acc.tokens === 0 ? 0 : x / acc.tokens);
    const pgClipFrac = perToken(acc.clipped);
    return {
      // No rows still yields a checkpoint at this step, so step numbering stays dense.
      checkpoint: { config: ckpt.config, weights: model.getWeights(), optimizer: optimizer.getState(), step: opts.step },
      perSample: built.perSample,
      loss: perStep(acc.loss),
      pgLoss: perStep(acc.pgLoss),
      pgClipFrac,
      pgClipFracLower: perToken(acc.clippedLower),
      approxKl: perStep(acc.approxKl),
      entropy: acc.entropyWeight === 0 ? 0 : acc.entropy / acc.entropyWeight,
      gradNorm: acc.finiteNorms === 0 ? 0 : acc.gradNorm / acc.finiteNorms,
      gradNormLast: acc.gradNormLast,
      ...(rl.useKlLoss ? { klLoss: perStep(acc.klLoss) } : {}),
      ...(stats.rewardKlPenalty !== undefined ? { rewardKlPenalty: stats.rewardKlPenalty } : {}),
      ...(opts.policyVersion !== undefined
        ? { staleness: stalenessHistogram(samples.map((x) => x.metadata.weightVersion), opts.policyVersion), partialSamples: samples.filter((x) => (x.metadata.weightVersions?.length ?? 0) > 1).length }
        : {}),
      ...(built.offPolicy ? { offPolicyCapped: built.offPolicy.capped, offPolicyMeanWeight: built.offPolicy.meanWeight } : {}),
      optimizerSteps: acc.steps,
      nonFiniteGradSteps: acc.nonFinite,
      tokens: trainedTokensOf(batch),
      rows,
      meanResponseLength: rows === 0 ? 0 : built.responseLengths.reduce((a, b) => a + b, 0) / rows,
      tokensRun: acc.tokensRun,
      paddedTokensRun: acc.paddedTokensRun,
      updateSeconds: (performance.now() - started) / 1000,
      skipped: built.skipped,
      tooLong: built.tooLong,
      ...(built.rejected !== undefined ? { rejected: built.rejected } : {}),
      meanReward: stats.meanReward,
      groups: stats.groups,
      flatGroups: stats.flatGroups,
      clipFraction: pgClipFrac,
    };
  } finally {
    optimizer.dispose();
    model.dispose();
  }
}

/**
 * Reference-policy logprobs of every sample's response under the rollout temperature (verl's ref
 * worker uses the same temperature as the actor), aligned with responseTokens; undefined for a
 * sample longer than maxSeq or without a trained token (it is not trained on).
 */
function requireReference(ckpt: Checkpoint, ref: Checkpoint | undefined): Checkpoint {
  if (!ref) throw new Error('rl.useKlLoss and rl.useKlInReward need the reference checkpoint (the policy RL started from)');
  if (JSON.stringify(ref.config) !== JSON.stringify(ckpt.config)) throw new Error('the reference checkpoint has a different model config than the policy');
  return ref;
}

async function referenceLogprobs(
  ckpt: Checkpoint,
  samples: readonly Sample[],
  ref: Checkpoint,
  temperature: number,
  progress: (p: PolicyUpdateProgress) => Promise<void>,
  phase: 'reference' | 'proximal',
  byLength: boolean,
): Promise<Array<number[] | undefined>> {
  const scored = samples
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => s.promptTokens.length + s.responseTokens.length <= ckpt.config.maxSeq && s.lossMask.some((m) => m > 0));
  // Each sample's logprobs land at its own index, so the order only decides which rows share a pass.
  const wanted = byLength ? rowsByLength(scored.map(({ s }) => [...s.promptTokens, ...s.responseTokens])).map((k) => scored[k]!) : scored;
  const out = new Array<number[] | undefined>(samples.length).fill(undefined);
  const model = Gpt.fromWeights(ref.config, ref.weights);
  try {
    for (let start = 0; start < wanted.length; start += REFERENCE_CHUNK_ROWS) {
      const part = wanted.slice(start, start + REFERENCE_CHUNK_ROWS);
      const lp = sequenceLogprobs(model, part.map(({ s }) => [...s.promptTokens, ...s.responseTokens]), REFERENCE_CHUNK_ROWS, temperature);
      part.forEach(({ s, i }, k) => {
        out[i] = (lp[k] as number[]).slice(s.promptTokens.length);
      });
      await progress({ phase, done: start + part.length, total: wanted.length });
    }
  } finally {
    model.dispose();
  }
  return out;
}

/**
 * Rows of each mini-batch of one epoch. Whole groups go to one mini-batch, as verl's split of a
 * rollout whose group members sit next to each other; the group order is shuffled per epoch
 * from `rand` (verl's actor does not shuffle by default: a deliberate difference, the usual PPO
 * practice). Groups are dealt in contiguous runs of ⌊G/M⌋ or ⌈G/M⌉; empty mini-batches are dropped.
 */
export function miniBatchRows(rowGroups: readonly string[], miniBatches: number, rand: () => number): number[][] {
  const rowsOf = new Map<string, number[]>();
  rowGroups.forEach((g, r) => {
    const list = rowsOf.get(g) ?? [];
    list.push(r);
    rowsOf.set(g, list);
  });
  const keys = [...rowsOf.keys()];
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [keys[i], keys[j]] = [keys[j] as string, keys[i] as string];
  }
  const parts: number[][] = [];
  for (let m = 0; m < miniBatches; m++) {
    const from = Math.floor((m * keys.length) / miniBatches);
    const to = Math.floor(((m + 1) * keys.length) / miniBatches);
    const rows = keys.slice(from, to).flatMap((k) => rowsOf.get(k) as number[]);
    if (rows.length > 0) parts.push(rows);
  }
  return parts;
}

function selectRows(batch: TrainBatch, rows: readonly number[], onPolicy: boolean): TrainBatch {
  const pick = <T>(xs: readonly T[]): T[] => rows.map((r) => xs[r] as T);
  const out: TrainBatch = { tokens: pick(batch.tokens), lossMask: pick(batch.lossMask) };
  if (batch.advantages) out.advantages = pick(batch.advantages);
  if (batch.tokenAdvantages) out.tokenAdvantages = pick(batch.tokenAdvantages);
  if (batch.oldLogprobs && !onPolicy) out.oldLogprobs = pick(batch.oldLogprobs);
  if (batch.refLogprobs) out.refLogprobs = pick(batch.refLogprobs);
  if (batch.tokenWeights) out.tokenWeights = pick(batch.tokenWeights);
  return out;
}
