/**
 * GRPO outcome advantages, as verl's `compute_grpo_outcome_advantage`
 * (verl/trainer/ppo/core_algos.py). Within a group (the responses to one prompt):
 *
 *   A_i = (s_i - mean) / (std + ε)   normAdvByStd (GRPO)
 *   A_i =  s_i - mean                otherwise (Dr.GRPO)
 *
 * with std the sample (unbiased, n - 1) standard deviation, as torch.std. A group of one has
 * mean 0 and std 1 by definition (torch.std of one value is NaN), so its advantage is its score
 * (/(1 + ε)). A group whose scores are all equal gets advantage 0 for every member; verl keeps
 * those samples in the batch, where they add 0 to the loss but count in its denominator.
 */
export interface AdvantageOptions {
  /** Divide by the group's std (verl algorithm.norm_adv_by_std_in_grpo); false = Dr.GRPO. */
  normAdvByStd: boolean;
  /** Added to the std (verl epsilon). */
  epsilon: number;
}

/** Advantages of one group's scores, in their order. */
export function groupAdvantage(scores: readonly number[], opts: AdvantageOptions): number[] {
  const n = scores.length;
  if (n === 0) return [];
  let mean = 0;
  let std = 1;
  if (n > 1) {
    mean = scores.reduce((a, s) => a + s, 0) / n;
    std = Math.sqrt(scores.reduce((a, s) => a + (s - mean) ** 2, 0) / (n - 1));
  }
  return scores.map((s) => (opts.normAdvByStd ? (s - mean) / (std + opts.epsilon) : s - mean));
}

/** One trajectory's outcome: the unit GRPO normalises (one verl response). */
export interface EpisodeScore {
  episodeId: string;
  /** Episodes with the same group id answer the same prompt; absent = a group of its own. */
  groupId: string | undefined;
  score: number;
}

export interface EpisodeAdvantages {
  advantages: Map<string, number>;
  groups: number;
  /** Groups of two or more whose scores are all equal: every member's advantage is 0. */
  flatGroups: number;
  /** Groups of one episode (advantage = its score, as verl). */
  singletonGroups: number;
}

/** Group key of an episode: its group id, or the episode itself. */
export function groupKey(groupId: string | undefined, episodeId: string): string {
  return groupId !== undefined ? `group:${groupId}` : `episode:${episodeId}`;
}

export function episodeAdvantages(episodes: readonly EpisodeScore[], opts: AdvantageOptions): EpisodeAdvantages {
  const groups = new Map<string, EpisodeScore[]>();
  for (const e of episodes) {
    const key = groupKey(e.groupId, e.episodeId);
    const list = groups.get(key) ?? [];
    list.push(e);
    groups.set(key, list);
  }
  const advantages = new Map<string, number>();
  let flatGroups = 0;
  let singletonGroups = 0;
  for (const members of groups.values()) {
    const scores = members.map((m) => m.score);
    if (members.length === 1) singletonGroups++;
    else if (scores.every((s) => s === scores[0])) flatGroups++;
    groupAdvantage(scores, opts).forEach((a, i) => advantages.set((members[i] as EpisodeScore).episodeId, a));
  }
  return { advantages, groups: groups.size, flatGroups, singletonGroups };
}
