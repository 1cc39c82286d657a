/**
 * Orchestration-queue activities that turn an episode's generations into training Samples.
 * Workflows only hold references to each generation's token blob (written by generate); the token
 * ids and logprobs are joined with the episode's reward and labels here, next to the blob store, and
 * the history gets back one SampleSetRef per role.
 */
import type { AgentRole, BlobRef, Sample, SampleMetadata } from '../src/domain/types';
import { getJson, putJson, type BlobStore } from '../src/store/blob-store';
import type { RunConfig } from '../src/config/schema';
import type { SnapReport } from '../src/timeline/types';
import type { TimelineCounts } from '../src/timeline/counts';
import type { SampleSetRef, SampleSets } from '../src/contracts/plan-act';
import { addCounts, emptyCounts, sumCounts } from '../src/timeline/counts';
import { mergeEpisode, unmergedCounts } from './timeline-merge';
import type { CompletionTokens, GenerationRef } from '../src/contracts/samples';



export interface EpisodeSamplesInput {
  episodeId: string;
  groupId?: string;
  /** The episode's one scalar reward, written on every sample it produced. */
  reward: number;
  generations: GenerationRef[];
  /**
   * Per generation, an advantage for the tokens it wrote (tree rollouts with tree.advantage 'tree');
   * written on the samples as tokenAdvantages, which then replace the GRPO group advantage.
   */
  segmentAdvantages?: number[];
}

export interface WriteSamplesInput {
  episodes: EpisodeSamplesInput[];
  /** Merge each episode's timelines (the run's timeline config); absent: one sample per call. */
  timeline?: RunConfig['timeline'];
}

export interface ConcatSamplesInput {
  sets: SampleSetRef[];
}

interface SampleFile {
  samples: Sample[];
  /** With timeline.snapDetection: where the episodes' surviving timelines part. */
  snaps?: SnapReport[];
}

export async function readSamples(store: BlobStore, ref: BlobRef): Promise<Sample[]> {
  return (await getJson<SampleFile>(store, ref)).samples;
}

export async function writeSet(store: BlobStore, role: AgentRole, samples: Sample[], merging?: { counts: TimelineCounts; snaps: SnapReport[] }): Promise<SampleSetRef> {
  const file: SampleFile = { samples, ...(merging && merging.snaps.length > 0 ? { snaps: merging.snaps } : {}) };
  const ref = await putJson(store, file, `samples-${role}`);
  return {
    role,
    ref,
    samples: samples.length,
    responseTokens: samples.reduce((n, s) => n + s.responseTokens.length, 0),
    meanReward: samples.length === 0 ? 0 : round(samples.reduce((a, s) => a + s.reward, 0) / samples.length),
    ...(merging ? { timelines: merging.counts } : {}),
  };
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

/**
 * The weight versions of a merged sample's calls: on a synced remote server an asynchronous
 * rollout's later calls may run on newer weights than its first. The sample then counts as the
 * oldest (its staleness is that of its oldest call) and lists them all.
 */
function withVersions(metadata: SampleMetadata, calls: GenerationRef[]): SampleMetadata {
  const versions = [...new Set(calls.map((g) => g.weightVersion))].sort((a, b) => a - b);
  return versions.length < 2 ? metadata : { ...metadata, weightVersion: versions[0]!, weightVersions: versions };
}

export function createSampleActivities({ store }: { store: BlobStore }) {
  return {
    /**
     * The episodes' samples, one set per role. With a timeline config, every call is captured as a
     * timeline and each episode's timelines are merged (src/timeline): a sample per surviving
     * timeline, the model's tokens of every absorbed call marked for training. Without one (workflows
     * started before capture), one sample per call, every response token the model's.
     */
    async writeEpisodeSamples(input: WriteSamplesInput): Promise<SampleSets> {
      const byRole = new Map<AgentRole, { samples: Sample[]; counts?: TimelineCounts; snaps: SnapReport[] }>();
      const roleSet = (role: AgentRole) => {
        let set = byRole.get(role);
        if (!set) byRole.set(role, (set = { samples: [], snaps: [], ...(input.timeline?.merge ? { counts: emptyCounts(input.timeline.snapDetection) } : {}) }));
        return set;
      };
      for (const episode of input.episodes) {
        const tokens = await Promise.all(episode.generations.map((g) => getJson<CompletionTokens>(store, g.tokens)));
        const meta = (g: GenerationRef): Pick<Sample, 'reward' | 'metadata'> => ({
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
        if (input.timeline?.merge && tokens.every((t) => t.messages !== undefined && t.outputText !== undefined)) {
          for (const [role, merged] of mergeEpisode(episode.generations, tokens, input.timeline, episode.segmentAdvantages)) {
            const set = roleSet(role);
            set.samples.push(...merged.samples.map((m) => {
              const labels = meta(m.generation);
              return { ...m.sample, reward: labels.reward, metadata: withVersions(labels.metadata, m.merged) };
            }));
            addCounts(set.counts!, merged.counts);
            set.snaps.push(...merged.snaps);
          }
          continue;
        }
        episode.generations.forEach((g, i) => {
          const t = tokens[i]!;
          const set = roleSet(g.role);
          const credit = episode.segmentAdvantages?.[i];
          set.samples.push({
            promptTokens: t.promptTokenIds,
            responseTokens: t.tokenIds,
            logprobs: t.logprobs,
            lossMask: t.tokenIds.map(() => 1),
            ...(credit !== undefined ? { tokenAdvantages: t.tokenIds.map(() => credit) } : {}),
            ...meta(g),
          });
          // Blobs written before capture cannot be merged: they count as captured and kept.
          if (set.counts) addCounts(set.counts, unmergedCounts(t));
        });
      }
      const out: SampleSets = {};
      for (const [role, set] of byRole) out[role] = await writeSet(store, role, set.samples, set.counts ? { counts: set.counts, snaps: set.snaps } : undefined);
      return out;
    },

    /** Joins per-episode sets of one role into the rollout's set, in the order given. */
    async concatSampleSets(input: ConcatSamplesInput): Promise<SampleSetRef> {
      const roles = new Set(input.sets.map((s) => s.role));
      if (roles.size !== 1) throw new Error(`concatSampleSets needs sets of one role, got ${[...roles].join(', ') || 'none'}`);
      const all: Sample[] = [];
      const snaps: SnapReport[] = [];
      for (const set of input.sets) {
        const file = await getJson<SampleFile>(store, set.ref);
        all.push(...file.samples);
        snaps.push(...(file.snaps ?? []));
      }
      const counts = sumCounts(input.sets.flatMap((s) => (s.timelines ? [s.timelines] : [])));
      return writeSet(store, input.sets[0]!.role, all, counts ? { counts, snaps } : undefined);
    },
  };
}

export type SampleActivities = ReturnType<typeof createSampleActivities>;
