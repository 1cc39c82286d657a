/**
 * DAPO's dynamic sampling (verl: algorithm.filter_groups): a group whose episodes all earned the
 * same reward has advantage 0 everywhere and teaches nothing, so it is dropped and replaced by
 * groups from further rollouts. Pure, so workflows decide with it deterministically.
 */

export interface GroupedReward {
  groupId?: string;
  reward: number;
}

/** Groups with reward spread (std > 0), in the order they first appear. */
export function groupsWithSpread(rows: readonly GroupedReward[]): string[] {
  const rewards = new Map<string, number[]>();
  for (const r of rows) {
    if (r.groupId === undefined) continue;
    const list = rewards.get(r.groupId) ?? [];
    list.push(r.reward);
    rewards.set(r.groupId, list);
  }
  return [...rewards].filter(([, rs]) => rs.some((x) => x !== rs[0])).map(([id]) => id);
}

/**
 * After one more rollout batch: the groups to train on so far (at most `wanted`, first come first
 * kept, as verl truncates to the train batch size) and whether to roll out another batch.
 */
export function nextDynamicSample(
  kept: readonly string[],
  batchRows: readonly GroupedReward[],
  opts: { wanted: number; batchesRun: number; maxBatches: number },
): { kept: string[]; more: boolean } {
  const all = [...kept, ...groupsWithSpread(batchRows)].slice(0, opts.wanted);
  return { kept: all, more: all.length < opts.wanted && opts.batchesRun < opts.maxBatches };
}
