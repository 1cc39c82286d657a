/**
 * What a rollout of any kind reports: its summary (counts, metrics, one row per episode) and its
 * sample sets, with the tree and horizon rollouts' extra counts.
 */
import type { HorizonSuccess } from '../horizon/metrics';
import type { SampleSets } from './sample-set';
import type { TreeRolloutCounts } from './tree';

/** Calculator calls of an episode or rollout, as the tools queue served them. */
export interface ToolMetrics {
  calls: number;
  /** Calls that returned an error to the actor (bad input, or a tool still failing after retries). */
  failures: number;
  /** Extra attempts Temporal made on top of the first one. */
  retries: number;
  /** Summed wall time of the calls (workflow time). */
  ms: number;
}

/** One row per episode in a rollout summary: enough to spot which problems failed and why. */
export interface EpisodeRow {
  episodeId: string;
  /** GRPO group (absent in summaries recorded before groups were listed). */
  groupId?: string;
  expression: string;
  reward: number;
  answer: string | null;
  failure?: string;
  /** rollout.plannerCredit correct-results: the planner's samples of this episode were left out. */
  plannerNotTrained?: true;
}

export type RolloutMode = 'shared' | 'dual' | 'single';

export interface RolloutSummary {
  rolloutId: number;
  mode: RolloutMode;
  episodes: number;
  answered: number;
  meanReward: number;
  /** Episodes that ended on malformed output, by failure code. */
  failures: Record<string, number>;
  metrics: {
    acts: number;
    generations: number;
    maxConcurrentActs: number;
    tools: ToolMetrics;
    meanEpisodeMs: number;
    durationMs: number;
  };
  rows: EpisodeRow[];
  samples: SampleSets;
  /** Tree rollouts: nodes, leaves and generated tokens of the trees. */
  tree?: TreeRolloutCounts;
  /** Horizon rollouts: success per plan horizon (metrics only; never in a training batch). */
  horizon?: HorizonSuccess[];
}
