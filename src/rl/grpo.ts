/**
 * GRPO without a critic: an episode's advantage is its reward relative to the other episodes of
 * the same prompt (its group). Pure functions, so the math is tested without a model.
 */
import type { Sample } from '../domain/types';
import type { TrainBatch } from '../model/train';

export interface GroupStats {
  /** Advantage per episode id; episodes of groups with no reward spread are absent. */
  advantages: Map<string, number>;
  groups: number;
  /** Groups whose episodes all earned the same reward: nothing to learn from them. */
  flatGroups: number;
  /** Mean over episodes (not samples), so long episodes do not weigh more. */
  meanReward: number;
}

const STD_EPS = 1e-6;

/** One reward per episode, normalised within its group by the group's mean and (population) std. */
export function groupAdvantages(samples: readonly Sample[]): GroupStats {
  // An episode without a group id forms a group of one and therefore gets no advantage.
  const groups = new Map<string, Map<string, number>>();
  for (const s of samples) {
    const key = s.metadata.groupId ?? `episode:${s.metadata.episodeId}`;
    const episodes = groups.get(key) ?? new Map<string, number>();
    episodes.set(s.metadata.episodeId, s.reward);
    groups.set(key, episodes);
  }
  const advantages = new Map<string, number>();
  let flatGroups = 0;
  let rewardSum = 0;
  let episodeCount = 0;
  for (const episodes of groups.values()) {
    const rewards = [...episodes.values()];
    const mean = rewards.reduce((a, r) => a + r, 0) / rewards.length;
    const std = Math.sqrt(rewards.reduce((a, r) => a + (r - mean) ** 2, 0) / rewards.length);
    rewardSum += rewards.reduce((a, r) => a + r, 0);
    episodeCount += rewards.length;
    if (rewards.every((r) => r === rewards[0])) {
      flatGroups++;
      continue;
    }
    for (const [episodeId, reward] of episodes) advantages.set(episodeId, (reward - mean) / (std + STD_EPS));
  }
  return { advantages, groups: groups.size, flatGroups, meanReward: episodeCount === 0 ? 0 : rewardSum / episodeCount };
}

export interface PgBatchResult {
  batch: TrainBatch;
  /** Samples of flat groups (advantage 0), left out. */
  skipped: number;
  /** Samples longer than maxSeq, left out rather than truncated (a cut row loses its reward's cause). */
  tooLong: number;
  stats: GroupStats;
}

/**
 * The policy-gradient batch: one row per sample, prompt then response. Per-token arrays follow
 * trainStep's alignment (entry t concerns predicting tokens[t]), so the prompt part is zeros.
 */
export function buildPgBatch(samples: readonly Sample[], opts: { maxSeq: number; clipEps: number }): PgBatchResult {
  const stats = groupAdvantages(samples);
  const batch: TrainBatch = { tokens: [], lossMask: [], advantages: [], oldLogprobs: [], clipEps: opts.clipEps };
  let skipped = 0;
  let tooLong = 0;
  for (const s of samples) {
    const advantage = stats.advantages.get(s.metadata.episodeId);
    if (advantage === undefined) {
      skipped++;
      continue;
    }
    const tokens = [...s.promptTokens, ...s.responseTokens];
    if (tokens.length > opts.maxSeq) {
      tooLong++;
      continue;
    }
    const zeros = s.promptTokens.map(() => 0);
    batch.tokens.push(tokens);
    batch.lossMask.push([...zeros, ...s.lossMask]);
    batch.oldLogprobs!.push([...zeros, ...s.logprobs]);
    batch.advantages!.push(advantage);
  }
  return { batch, skipped, tooLong, stats };
}
