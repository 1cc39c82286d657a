/**
 * Training samples of horizon episodes (docs/grid-horizons.md), one per executed chunk as RLinf's
 * ChunkStepResult: the plan's prompt and generated tokens, trained (loss mask 1) only on the chunk's
 * slice of the plan, [chunkOffset, chunkOffset + executed), whose logprobs are that slice of the
 * plan's logprobs; metadata records planHorizon and chunkOffset. Moves planned but never executed
 * (after the goal, past the step budget) are not trained. A plan that was not H moves (model
 * nonsense) ended its episode: it is one sample with all its tokens trained, so RL can push it down.
 * Samples carry Sample fields only: per-H success counts are metrics and never enter a batch.
 */
import type { BlobRef, Sample } from '../src/domain/types';
import { chunkLogprobs } from '../src/horizon/plan';
import { getJson, type BlobStore } from '../src/store/blob-store';
import type { SampleSetRef } from '../src/contracts/sample-set';
import { writeSampleSet } from '../src/contracts/sample-set';
import type { CompletionTokens } from '../src/contracts/generation';

export interface HorizonPlanSamples {
  planIndex: number;
  horizon: number;
  tokens: BlobRef;
  weightVersion: number;
  /** Absent for a plan that was not H moves. */
  chunks?: Array<{ chunkOffset: number; executed: number }>;
}

export interface HorizonEpisodeSamples {
  episodeId: string;
  groupId: string;
  reward: number;
  plans: HorizonPlanSamples[];
}

export class HorizonSampleError extends Error {
  override readonly name = 'HorizonSampleError';
}

/** The samples of one episode's plans (pure but for reading the plans' token blobs). */
export function horizonSamples(episode: HorizonEpisodeSamples, tokensOf: (plan: HorizonPlanSamples) => CompletionTokens): Sample[] {
  const out: Sample[] = [];
  for (const plan of episode.plans) {
    const t = tokensOf(plan);
    const metadata = (chunkOffset: number): Sample['metadata'] => ({
      role: 'single',
      episodeId: episode.episodeId,
      turn: plan.planIndex,
      planHorizon: plan.horizon,
      chunkOffset,
      weightVersion: plan.weightVersion,
      groupId: episode.groupId,
    });
    const base = { promptTokens: t.promptTokenIds, responseTokens: t.tokenIds, reward: episode.reward };
    if (plan.chunks === undefined) {
      out.push({ ...base, logprobs: t.logprobs, lossMask: t.tokenIds.map(() => 1), metadata: metadata(0) });
      continue;
    }
    // Move k of a valid plan is token k of its generation (src/tasks/grid/moves.ts).
    if (t.tokenIds.length < plan.horizon) {
      throw new HorizonSampleError(`plan ${plan.planIndex} of ${episode.episodeId} has ${t.tokenIds.length} tokens for ${plan.horizon} moves`);
    }
    for (const chunk of plan.chunks) {
      if (chunk.executed === 0) continue;
      const slice = chunkLogprobs(t.logprobs, chunk.chunkOffset, chunk.executed);
      const inChunk = (j: number) => j >= chunk.chunkOffset && j < chunk.chunkOffset + chunk.executed;
      out.push({
        ...base,
        logprobs: t.tokenIds.map((_, j) => (inChunk(j) ? slice[j - chunk.chunkOffset]! : 0)),
        lossMask: t.tokenIds.map((_, j) => (inChunk(j) ? 1 : 0)),
        metadata: metadata(chunk.chunkOffset),
      });
    }
  }
  return out;
}

export function createHorizonSampleActivities({ store }: { store: BlobStore }) {
  return {
    async writeHorizonSamples(input: { episodes: HorizonEpisodeSamples[] }): Promise<SampleSetRef> {
      const samples: Sample[] = [];
      for (const episode of input.episodes) {
        const tokens = new Map<string, CompletionTokens>();
        for (const plan of episode.plans) tokens.set(plan.tokens.sha256, await getJson<CompletionTokens>(store, plan.tokens));
        samples.push(...horizonSamples(episode, (plan) => tokens.get(plan.tokens.sha256)!));
      }
      return writeSampleSet(store, 'single', samples);
    },
  };
}

export type HorizonSampleActivities = ReturnType<typeof createHorizonSampleActivities>;
