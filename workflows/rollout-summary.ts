/**
 * The one way a rollout workflow reports: its rows (one per episode), the codes of what failed, its
 * sample sets, and whichever metrics the kind has (the rest are 0). Episodes and mean reward are the
 * rows' own, so every kind counts them alike.
 */
import type { EpisodeRow, RolloutMode, RolloutSummary } from '../src/contracts/rollout-summary';
import type { SampleSets } from '../src/contracts/sample-set';
import { emptyToolMetrics } from './tool-metrics';
import { mean } from './web-ui-format';

export interface RolloutReport extends Pick<RolloutSummary, 'tree' | 'horizon'> {
  rolloutId: number;
  mode: RolloutMode;
  rows: EpisodeRow[];
  /** Episodes that ended with an answer (right or wrong). */
  answered: number;
  /** One code per failure (an episode's, or a tree node's). */
  failureCodes: readonly string[];
  samples: SampleSets;
  durationMs: number;
  metrics?: Partial<Omit<RolloutSummary['metrics'], 'durationMs'>>;
}

export function rolloutSummary(r: RolloutReport): RolloutSummary {
  const failures: Record<string, number> = {};
  for (const code of r.failureCodes) failures[code] = (failures[code] ?? 0) + 1;
  return {
    rolloutId: r.rolloutId,
    mode: r.mode,
    episodes: r.rows.length,
    answered: r.answered,
    meanReward: mean(r.rows.map((row) => row.reward)),
    failures,
    metrics: { acts: 0, generations: 0, maxConcurrentActs: 0, tools: emptyToolMetrics(), meanEpisodeMs: 0, ...r.metrics, durationMs: r.durationMs },
    rows: r.rows,
    samples: r.samples,
    ...(r.tree ? { tree: r.tree } : {}),
    ...(r.horizon ? { horizon: r.horizon } : {}),
  };
}
