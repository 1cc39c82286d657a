/**
 * Episodes' training samples by role, each labelled with its episode's reward and the names of the
 * call it ended on. With a timeline config that merges, and every call of an episode captured, the
 * episode's calls are merged (episode-merge.ts); otherwise (workflows started before capture, or
 * timeline.merge false) every call is a sample of its own, every response token the model's.
 */
import type { AgentRole, Sample, SampleMetadata } from '../domain/types';
import type { TimelineMergeConfig } from './agent-merge';
import { addCounts, emptyCounts, type TimelineCounts } from './counts';
import { allCaptured, mergeEpisode, unmergedCounts, type CallLabel, type CallTokens } from './episode-merge';
import type { SnapReport } from './types';

/** A call as the samples label it: its names and the weights version that served it. */
export interface EpisodeCall extends CallLabel {
  weightVersion: number;
}

/** One episode's calls and what labels its samples (writeEpisodeSamples' input, per episode). */
export interface EpisodeOfCalls<G extends EpisodeCall> {
  episodeId: string;
  groupId?: string;
  /** The episode's one scalar reward, written on every sample it produced. */
  reward: number;
  generations: G[];
  /**
   * Per generation, an advantage for the tokens it wrote (tree rollouts with tree.advantage 'tree');
   * written on the samples as tokenAdvantages, which then replace the GRPO group advantage.
   */
  segmentAdvantages?: number[];
}

/** One role's samples so far; counts only when the timeline config merges. */
export interface RoleSamples {
  samples: Sample[];
  counts?: TimelineCounts;
  snaps: SnapReport[];
}

/**
 * The weight versions of a merged sample's calls: on a synced remote server an asynchronous
 * rollout's later calls may run on newer weights than its first. The sample then counts as the
 * oldest (its staleness is that of its oldest call) and lists them all.
 */
function withVersions(metadata: SampleMetadata, calls: readonly EpisodeCall[]): SampleMetadata {
  const versions = [...new Set(calls.map((g) => g.weightVersion))].sort((a, b) => a - b);
  return versions.length < 2 ? metadata : { ...metadata, weightVersion: versions[0]!, weightVersions: versions };
}

/** The samples of episodes added one at a time, by role in the order the roles first appear. */
export class SamplesByRole<G extends EpisodeCall> {
  readonly roles = new Map<AgentRole, RoleSamples>();

  constructor(private readonly cfg?: TimelineMergeConfig) {}

  /** Adds one episode's samples; `tokens[i]` is the blob of `episode.generations[i]`. */
  add(episode: EpisodeOfCalls<G>, tokens: readonly CallTokens[]): void {
    const label = (g: G): Pick<Sample, 'reward' | 'metadata'> => ({
      reward: episode.reward,
      metadata: {
        role: g.role,
        episodeId: episode.episodeId,
        turn: g.turn,
        ...(g.actId !== undefined ? { actId: g.actId } : {}),
        weightVersion: g.weightVersion,
        ...(episode.groupId !== undefined ? { groupId: episode.groupId } : {}),
      },
    });
    if (this.cfg?.merge && allCaptured(tokens)) {
      for (const [role, merged] of mergeEpisode(episode.generations, tokens, this.cfg, episode.segmentAdvantages)) {
        const set = this.role(role);
        set.samples.push(...merged.samples.map((m) => {
          const labels = label(m.generation);
          return { ...m.sample, reward: labels.reward, metadata: withVersions(labels.metadata, m.merged) };
        }));
        addCounts(set.counts!, merged.counts);
        set.snaps.push(...merged.snaps);
      }
      return;
    }
    episode.generations.forEach((g, i) => {
      const t = tokens[i]!;
      const set = this.role(g.role);
      const credit = episode.segmentAdvantages?.[i];
      set.samples.push({
        promptTokens: t.promptTokenIds,
        responseTokens: t.tokenIds,
        logprobs: t.logprobs,
        lossMask: t.tokenIds.map(() => 1),
        ...(credit !== undefined ? { tokenAdvantages: t.tokenIds.map(() => credit) } : {}),
        ...label(g),
      });
      // Blobs written before capture cannot be merged: they count as captured and kept.
      if (set.counts) addCounts(set.counts, unmergedCounts(t));
    });
  }

  private role(role: AgentRole): RoleSamples {
    let set = this.roles.get(role);
    if (!set) this.roles.set(role, (set = { samples: [], snaps: [], ...(this.cfg?.merge ? { counts: emptyCounts(this.cfg.snapDetection) } : {}) }));
    return set;
  }
}
