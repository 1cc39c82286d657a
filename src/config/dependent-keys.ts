/**
 * No silent options: keys that only take effect when another setting turns them on. Set to anything
 * but their default while that setting is off, they are refused by name, with what would make them
 * count (src/config/defaults.ts: a key set to its default cannot be told from one left out).
 */
import { differsFromDefault } from './defaults';
import type { RunConfig } from './schema';

interface DependentKey {
  /** Dotted path of the key. */
  key: string;
  /** Whether the config gives the key something to do. */
  active: (cfg: RunConfig) => boolean;
  /** What would: the refusal's reason. */
  needs: (cfg: RunConfig) => string;
}

const onlyWith = (keys: string[], active: DependentKey['active'], needs: DependentKey['needs']): DependentKey[] => keys.map((key) => ({ key, active, needs }));
const treeAdvantages = (cfg: RunConfig) => cfg.rollout.kind === 'tree' && cfg.tree.advantage === 'tree';

const DEPENDENT_KEYS: DependentKey[] = [
  ...onlyWith(['rl.klLossCoef', 'rl.klLossType'], (c) => c.rl.useKlLoss, () => 'it shapes the KL loss, which rl.useKlLoss turns on (it is false)'),
  ...onlyWith(['rl.klRewardCoef', 'rl.klPenalty'], (c) => c.rl.useKlInReward, () => 'it shapes the KL penalty in the reward, which rl.useKlInReward turns on (it is false)'),
  ...onlyWith(['rl.dynamicSampling.maxBatchesPerStep'], (c) => c.rl.dynamicSampling.enabled, () => 'it bounds dynamic sampling, which rl.dynamicSampling.enabled turns on (it is false)'),
  ...onlyWith(['rl.async.correction', 'rl.async.isCap'], (c) => (c.rl.async?.maxStaleness ?? 0) > 0, () => 'it corrects for stale samples, and with rl.async.maxStaleness 0 the schedule is synchronous: there are none'),
  ...onlyWith(['rl.async.isCap'], (c) => c.rl.async?.correction !== 'none', () => 'it caps the importance weight of rl.async.correction decoupled or tis, and the correction is none'),
  // Tree credit gives every token its own advantage from the tree (src/tree/advantages.ts): the
  // group statistics and a KL penalty folded into the reward never reach the loss.
  ...onlyWith(['rl.normAdvByStd', 'rl.advEpsilon', 'rl.useKlInReward'], (c) => !treeAdvantages(c), () => 'with tree.advantage: tree each token takes its advantage from the tree, not from the group\'s rewards'),
  ...onlyWith(['horizon.planRewardCoef', 'horizon.baseH'], (c) => c.horizon?.usePlanReward === true, () => 'it scales the plan reward, which horizon.usePlanReward turns on (it is false)'),
  ...onlyWith(
    ['timeline.compareBy', 'timeline.ignoreTools', 'timeline.fixRetokenizationDrift', 'timeline.snapDetection'],
    (c) => c.timeline.merge,
    () => 'it tunes timeline merging, and timeline.merge is false (one sample per call)',
  ),
  ...onlyWith(['compare.sftBudget'], (c) => c.compare.moreSft || c.compare.filteredSft, () => 'it budgets the SFT baselines (compare.moreSft, compare.filteredSft), and neither is on'),
];

/** The keys this config sets to something other than their default where nothing reads them. */
export function inactiveKeys(cfg: RunConfig): Array<{ path: string; message: string }> {
  const problems: Array<{ path: string; message: string }> = [];
  for (const { key, active, needs } of DEPENDENT_KEYS) {
    if (!differsFromDefault(cfg, key) || active(cfg)) continue;
    if (problems.some((p) => p.path === key)) continue;
    problems.push({ path: key, message: `${needs(cfg)}; leave it out or make it count` });
  }
  return problems;
}
