/**
 * GRPO without a critic: an episode's advantage is its score relative to the other episodes of
 * the same prompt (its group). Pure functions, so the math is tested without a model.
 *
 * An episode is the unit verl calls a response: it earns one outcome reward, and all of its
 * samples (one per generation: planner and actor turns) share that reward and its advantage,
 * as the tokens of one multi-turn verl response share one.
 */
import type { SampleCredit } from '../contracts/rollout-record';
import type { KlKind } from '../config/schema';
import type { Sample } from '../domain/types';
import { behaviourWeights, type OffPolicyCorrection } from './off-policy';
import type { TrainBatch } from './trainer';
import { episodeAdvantages, groupKey, type AdvantageOptions, type EpisodeScore } from './advantages';
import { klPenalty } from './kl';

export interface GroupStats {
  /** Advantage per episode id; every episode has one (flat groups: 0). */
  advantages: Map<string, number>;
  groups: number;
  /** Groups whose episodes all earned the same score: advantage 0, nothing to learn from them. */
  flatGroups: number;
  /** Episodes without a group: a group of one, advantage = score (verl's mean 0, std 1). */
  singletonGroups: number;
  /** Mean reward over episodes (not samples), so long episodes do not weigh more; before any KL penalty. */
  meanReward: number;
  /**
   * useKlInReward only: verl's actor/reward_kl_penalty, the mean over samples of each sample's
   * mean per-token KL estimate against the reference (before multiplying by the coefficient); a
   * sample with no trained token adds 0 and counts, as verl's masked_mean of an all-masked row.
   * Samples too long to score (no reference logprobs) are left out.
   */
  rewardKlPenalty?: number;
}

/**
 * verl's use_kl_in_reward: token-level rewards become score - β·kl_t before the advantage
 * estimator, and GRPO's estimator sums the token-level rewards of a response into one score.
 * So for GRPO the penalty acts per trajectory: score = reward - β Σ_t kl_t, summed over the
 * trained tokens of all the episode's samples, and then normalised within the group with the
 * other scores. kl_t compares the behaviour logprobs (the engine's) with the reference's, as
 * verl compares old_log_probs with ref_log_prob.
 */
export interface KlInReward {
  coef: number;
  kind: KlKind;
  /**
   * Reference logprobs per sample (same order as the samples), aligned with responseTokens;
   * undefined for a sample that cannot be scored (longer than maxSeq), which then adds no penalty.
   */
  refLogprobs: ReadonlyArray<readonly number[] | undefined>;
}

export interface PgBatchOptions extends AdvantageOptions {
  maxSeq: number;
  klInReward?: KlInReward;
  /**
   * Reference logprobs per sample for the KL loss, aligned with responseTokens; copied into the
   * batch (prompt part zeros) for the rows kept.
   */
  refLogprobs?: ReadonlyArray<readonly number[] | undefined>;
  /**
   * Off-policy correction (src/rl/off-policy.ts): per sample the proximal policy's logprobs, aligned
   * with responseTokens; they replace the behaviour logprobs as the ratio's denominator, and each
   * token's loss is weighted by π_prox / π_behav as the mode says.
   */
  offPolicy?: { prox: ReadonlyArray<readonly number[] | undefined>; mode: Exclude<OffPolicyCorrection, 'none'>; cap: number };
  /**
   * grpo (default): every sample, with its group advantage. rft (rejection-sampling fine-tuning,
   * compare.rft): only the samples of episodes that earned a reward above 0, each with advantage 1,
   * so the clipped loss fits the correct episodes (RAFT++); the others are left out (rejected).
   */
  objective?: 'grpo' | 'rft';
  /** rl.advantageNorm role: each role's advantages from its own samples' episodes. */
  advantageNorm?: 'episode' | 'role';
}

export interface PgBatchResult {
  batch: TrainBatch;
  /** Group key of each row: mini-batches keep a group's rows together. */
  rowGroups: string[];
  /** Response tokens of each row (trained or not). */
  responseLengths: number[];
  /** Samples with no trained token (empty response or all masked), left out: they add nothing to any loss. */
  skipped: number;
  /** Samples longer than maxSeq, left out rather than truncated (a cut row loses its reward's cause). */
  tooLong: number;
  /** objective rft: samples left out because their episode's reward was not above 0. */
  rejected?: number;
  stats: GroupStats;
  /** With offPolicy: trained tokens whose weight the cap changed, and the mean weight over trained tokens. */
  offPolicy?: { capped: number; meanWeight: number };
  /** Per input sample, in order: the advantage it got and whether it became a row (the rollout viewer shows both). */
  perSample: SampleCredit[];
}

/** Per-episode scores: its reward minus the KL penalty (if any). */
function episodeScores(samples: readonly Sample[], kl: KlInReward | undefined): { scores: EpisodeScore[]; meanReward: number; rewardKlPenalty?: number } {
  const byEpisode = new Map<string, EpisodeScore>();
  // An episode's samples share its reward; the first one's is taken.
  const rewards: number[] = [];
  let klSeqMeanSum = 0;
  let klSeqs = 0;
  samples.forEach((s, i) => {
    const id = s.metadata.episodeId;
    let e = byEpisode.get(id);
    if (!e) {
      e = { episodeId: id, groupId: s.metadata.groupId, score: s.reward };
      byEpisode.set(id, e);
      rewards.push(s.reward);
    }
    if (!kl) return;
    const ref = kl.refLogprobs[i];
    if (!ref) {
      // No trained token: verl's masked_mean of the row is 0 and the row counts in the batch mean.
      // A sample with trained tokens but no reference logprobs (longer than maxSeq) is left out.
      if (!s.lossMask.some((m) => m > 0)) klSeqs++;
      return;
    }
    let sum = 0;
    let n = 0;
    s.lossMask.forEach((m, t) => {
      if (m <= 0) return;
      sum += klPenalty(s.logprobs[t] as number, ref[t] as number, kl.kind);
      n++;
    });
    e.score -= kl.coef * sum;
    if (n > 0) klSeqMeanSum += sum / n;
    klSeqs++;
  });
  const scores = [...byEpisode.values()];
  const meanReward = rewards.length === 0 ? 0 : rewards.reduce((a, r) => a + r, 0) / rewards.length;
  return { scores, meanReward, ...(kl ? { rewardKlPenalty: klSeqs === 0 ? 0 : klSeqMeanSum / klSeqs } : {}) };
}

/** Advantage per episode (verl GRPO), plus the rollout's reward statistics. */
export function groupAdvantages(samples: readonly Sample[], opts: AdvantageOptions & { klInReward?: KlInReward }): GroupStats {
  const { scores, meanReward, rewardKlPenalty } = episodeScores(samples, opts.klInReward);
  const adv = episodeAdvantages(scores, opts);
  return {
    advantages: adv.advantages,
    groups: adv.groups,
    flatGroups: adv.flatGroups,
    singletonGroups: adv.singletonGroups,
    meanReward,
    ...(rewardKlPenalty !== undefined ? { rewardKlPenalty } : {}),
  };
}

/** rl.advantageNorm role: per role, the advantages its samples' episodes get among the group's episodes that have that role's samples. */
function roleAdvantages(samples: readonly Sample[], opts: PgBatchOptions): Map<string, Map<string, number>> {
  const roles = [...new Set(samples.map((s) => s.metadata.role))];
  return new Map(
    roles.map((role) => {
      const rows = samples.flatMap((s, i) => (s.metadata.role === role ? [i] : []));
      // The KL penalty's reference logprobs are indexed like the samples: take the role's rows.
      const kl = opts.klInReward ? { klInReward: { ...opts.klInReward, refLogprobs: rows.map((i) => opts.klInReward!.refLogprobs[i]) } } : {};
      return [role, groupAdvantages(rows.map((i) => samples[i]!), { ...opts, ...kl }).advantages];
    }),
  );
}

/**
 * The policy-gradient batch: one row per sample, prompt then response. Per-token arrays follow
 * trainStep's alignment (entry t concerns predicting tokens[t]), so the prompt part is zeros.
 * Advantages come from all samples' episodes, including rows left out here.
 */
export function buildPgBatch(samples: readonly Sample[], opts: PgBatchOptions): PgBatchResult {
  const stats = groupAdvantages(samples, opts);
  const byRole = opts.advantageNorm === 'role' ? roleAdvantages(samples, opts) : undefined;
  const batch: TrainBatch = { tokens: [], lossMask: [], advantages: [], oldLogprobs: [] };
  if (opts.refLogprobs) batch.refLogprobs = [];
  const rft = opts.objective === 'rft';
  // Samples with their own per-token advantages (tree credit) put the whole batch on per-token ones.
  if (!rft && samples.some((s) => s.tokenAdvantages !== undefined)) batch.tokenAdvantages = [];
  if (opts.offPolicy) batch.tokenWeights = [];
  const weighed = { capped: 0, sum: 0, tokens: 0 };
  const rowGroups: string[] = [];
  const responseLengths: number[] = [];
  let skipped = 0;
  let tooLong = 0;
  let rejected = 0;
  const perSample: SampleCredit[] = [];
  samples.forEach((s, i) => {
    const groupAdv = rft ? (s.reward > 0 ? 1 : 0) : ((byRole?.get(s.metadata.role) ?? stats.advantages).get(s.metadata.episodeId) as number);
    const credit = (status: SampleCredit['status']) => perSample.push({ advantage: groupAdv, status });
    if (rft && !(s.reward > 0)) {
      rejected++;
      credit('rejected');
      return;
    }
    const tokens = [...s.promptTokens, ...s.responseTokens];
    if (tokens.length > opts.maxSeq) {
      tooLong++;
      credit('too-long');
      return;
    }
    // Entry 0 of a row is never trained (nothing predicts it), hence the position check.
    if (!s.lossMask.some((m, j) => m > 0 && s.promptTokens.length + j >= 1)) {
      skipped++;
      credit('no-trained-token');
      return;
    }
    credit('trained');
    const zeros = s.promptTokens.map(() => 0);
    batch.tokens.push(tokens);
    batch.lossMask.push([...zeros, ...s.lossMask]);
    if (opts.offPolicy) {
      const prox = opts.offPolicy.prox[i];
      if (!prox) throw new Error(`sample ${i} (episode ${s.metadata.episodeId}) has no proximal logprobs`);
      const w = behaviourWeights(prox, s.logprobs, opts.offPolicy.mode, opts.offPolicy.cap);
      batch.oldLogprobs!.push([...zeros, ...prox]);
      batch.tokenWeights!.push([...zeros, ...w.weights]);
      s.lossMask.forEach((m, j) => {
        if (m <= 0) return;
        weighed.tokens++;
        weighed.sum += w.weights[j] as number;
        if (w.capped[j]) weighed.capped++;
      });
    } else batch.oldLogprobs!.push([...zeros, ...s.logprobs]);
    if (batch.tokenAdvantages) {
      const own = s.tokenAdvantages;
      if (own && own.length !== s.responseTokens.length) throw new Error(`sample ${i} (episode ${s.metadata.episodeId}) has ${own.length} token advantages for ${s.responseTokens.length} response tokens`);
      const perToken = own ?? s.responseTokens.map(() => groupAdv);
      batch.tokenAdvantages.push([...zeros, ...perToken]);
      // The row's scalar only says whether any trained token has a non-zero advantage (row skipping).
      batch.advantages!.push(perToken.some((a, j) => a !== 0 && (s.lossMask[j] ?? 0) > 0) ? 1 : 0);
    } else {
      batch.advantages!.push(groupAdv);
    }
    if (batch.refLogprobs) {
      const ref = opts.refLogprobs?.[i];
      if (!ref) throw new Error(`sample ${i} (episode ${s.metadata.episodeId}) has no reference logprobs`);
      batch.refLogprobs.push([...zeros, ...ref]);
    }
    rowGroups.push(groupKey(s.metadata.groupId, s.metadata.episodeId));
    responseLengths.push(s.responseTokens.length);
  });
  return {
    batch,
    rowGroups,
    responseLengths,
    skipped,
    tooLong,
    ...(rft ? { rejected } : {}),
    stats,
    perSample,
    ...(opts.offPolicy ? { offPolicy: { capped: weighed.capped, meanWeight: weighed.tokens === 0 ? 1 : weighed.sum / weighed.tokens } } : {}),
  };
}
