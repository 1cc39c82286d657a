/**
 * Orchestration-queue activities that turn an episode's generations into training Samples.
 * Workflows only hold references to each generation's token blob (written by generate); the token
 * ids and logprobs are joined with the episode's reward and labels here, next to the blob store
 * (src/timeline/episode-samples.ts), and the history gets back one SampleSetRef per role
 * (src/contracts/sample-set.ts: the format).
 */
import type { RunConfig } from '../src/config/schema';
import type { CompletionTokens, GenerationRef } from '../src/contracts/generation';
import { readSampleFile, writeSampleSet, type SampleSetRef, type SampleSets } from '../src/contracts/sample-set';
import type { Sample } from '../src/domain/types';
import { getJson, type BlobStore } from '../src/store/blob-store';
import { sumCounts } from '../src/timeline/counts';
import { SamplesByRole, type EpisodeOfCalls } from '../src/timeline/episode-samples';
import type { SnapReport } from '../src/timeline/types';

export type EpisodeSamplesInput = EpisodeOfCalls<GenerationRef>;

export interface WriteSamplesInput {
  episodes: EpisodeSamplesInput[];
  /** Merge each episode's timelines (the run's timeline config); absent: one sample per call. */
  timeline?: RunConfig['timeline'];
}

export interface ConcatSamplesInput {
  sets: SampleSetRef[];
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
      const byRole = new SamplesByRole<GenerationRef>(input.timeline);
      for (const episode of input.episodes) {
        byRole.add(episode, await Promise.all(episode.generations.map((g) => getJson<CompletionTokens>(store, g.tokens))));
      }
      const out: SampleSets = {};
      for (const [role, set] of byRole.roles) out[role] = await writeSampleSet(store, role, set.samples, set.counts ? { counts: set.counts, snaps: set.snaps } : undefined);
      return out;
    },

    /** Joins per-episode sets of one role into the rollout's set, in the order given. */
    async concatSampleSets(input: ConcatSamplesInput): Promise<SampleSetRef> {
      const roles = new Set(input.sets.map((s) => s.role));
      if (roles.size !== 1) throw new Error(`concatSampleSets needs sets of one role, got ${[...roles].join(', ') || 'none'}`);
      const all: Sample[] = [];
      const snaps: SnapReport[] = [];
      for (const set of input.sets) {
        const file = await readSampleFile(store, set.ref);
        all.push(...file.samples);
        snaps.push(...(file.snaps ?? []));
      }
      const counts = sumCounts(input.sets.flatMap((s) => (s.timelines ? [s.timelines] : [])));
      return writeSampleSet(store, input.sets[0]!.role, all, counts ? { counts, snaps } : undefined);
    },
  };
}

export type SampleActivities = ReturnType<typeof createSampleActivities>;
