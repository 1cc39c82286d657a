/** Each GRPO group's rewards, sorted: what the agent-rollout tests compare (e.g. [[0, 1], [0, 1]]). */
export function sortedGroupRewards(rows: ReadonlyArray<{ groupId?: string; reward: number }>): number[][] {
  const byGroup = new Map<string, number[]>();
  for (const r of rows) byGroup.set(r.groupId!, [...(byGroup.get(r.groupId!) ?? []), r.reward]);
  return [...byGroup.values()].map((rs) => [...rs].sort());
}
