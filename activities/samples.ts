/**
 * Orchestration-queue activities that turn an episode's generations into training Samples.
 * Workflows only hold references to each generation's token blob (written by generate); the token
 * ids and logprobs are joined with the episode's reward and labels here, next to the blob store, and
 * the history gets back one SampleSetRef per role.
 */
import type { AgentRole, BlobRef, Sample } from '../src/domain/types';
import { getJson, putJson, type BlobStore } from '../src/store/blob-store';
import type { SampleSetRef, SampleSets } from '../workflows/plan-act-types';

/** What generate writes for every completion (see activities/inference.ts). */
interface CompletionTokens {
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
}

export interface GenerationRef {
  role: AgentRole;
  turn: number;
  actId?: string;
  tokens: BlobRef;
  weightVersion: number;
}

export interface EpisodeSamplesInput {
  episodeId: string;
  groupId?: string;
  /** The episode's one scalar reward, written on every sample it produced. */
  reward: number;
  generations: GenerationRef[];
}

export interface WriteSamplesInput {
  episodes: EpisodeSamplesInput[];
}

export interface ConcatSamplesInput {
  sets: SampleSetRef[];
}

interface SampleFile {
  samples: Sample[];
}

export async function readSamples(store: BlobStore, ref: BlobRef): Promise<Sample[]> {
  return (await getJson<SampleFile>(store, ref)).samples;
}

async function writeSet(store: BlobStore, role: AgentRole, samples: Sample[]): Promise<SampleSetRef> {
  const ref = await putJson(store, { samples } satisfies SampleFile, `samples-${role}`);
  return {
    role,
    ref,
    samples: samples.length,
    responseTokens: samples.reduce((n, s) => n + s.responseTokens.length, 0),
    meanReward: samples.length === 0 ? 0 : round(samples.reduce((a, s) => a + s.reward, 0) / samples.length),
  };
}

function round(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}

export function createSampleActivities({ store }: { store: BlobStore }) {
  return {
    /** One Sample per generation; every response token was written by the model, so its loss mask is 1. */
    async writeEpisodeSamples(input: WriteSamplesInput): Promise<SampleSets> {
      const byRole = new Map<AgentRole, Sample[]>();
      for (const episode of input.episodes) {
        const tokens = await Promise.all(episode.generations.map((g) => getJson<CompletionTokens>(store, g.tokens)));
        episode.generations.forEach((g, i) => {
          const t = tokens[i]!;
          const sample: Sample = {
            promptTokens: t.promptTokenIds,
            responseTokens: t.tokenIds,
            logprobs: t.logprobs,
            lossMask: t.tokenIds.map(() => 1),
            reward: episode.reward,
            metadata: {
              role: g.role,
              episodeId: episode.episodeId,
              turn: g.turn,
              ...(g.actId !== undefined ? { actId: g.actId } : {}),
              weightVersion: g.weightVersion,
              ...(episode.groupId !== undefined ? { groupId: episode.groupId } : {}),
            },
          };
          const list = byRole.get(g.role) ?? [];
          list.push(sample);
          byRole.set(g.role, list);
        });
      }
      const out: SampleSets = {};
      for (const [role, samples] of byRole) out[role] = await writeSet(store, role, samples);
      return out;
    },

    /** Joins per-episode sets of one role into the rollout's set, in the order given. */
    async concatSampleSets(input: ConcatSamplesInput): Promise<SampleSetRef> {
      const roles = new Set(input.sets.map((s) => s.role));
      if (roles.size !== 1) throw new Error(`concatSampleSets needs sets of one role, got ${[...roles].join(', ') || 'none'}`);
      const all: Sample[] = [];
      for (const set of input.sets) all.push(...(await readSamples(store, set.ref)));
      return writeSet(store, input.sets[0]!.role, all);
    },
  };
}

export type SampleActivities = ReturnType<typeof createSampleActivities>;
