/**
 * Agent episodes through the gateway: an agent (src/gateway/arith-agent.ts, official `openai`
 * client) solves one problem against an OpenAI-compatible gateway that records its calls, and the
 * recorded timelines of finished episodes are merged into training samples.
 */
import { Context } from '@temporalio/activity';
import OpenAI from 'openai';
import type { RunConfig } from '../src/config/schema';
import type { Sample } from '../src/domain/types';
import { solveArithmetic, type AgentAnswer } from '../src/gateway/arith-agent';
import { readEpisodeTimelines } from '../src/gateway/recorder';
import type { BlobStore } from '../src/store/blob-store';
import { addCounts, emptyCounts } from '../src/timeline/counts';
import type { SnapReport } from '../src/timeline/types';
import type { SampleSetRef } from '../src/contracts/plan-act';
import { writeSet } from './samples';
import { mergeAgentTimelines } from './timeline-merge';

export interface RunAgentEpisodeInput {
  /** The gateway's base URL, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: string;
  model: string;
  episodeId: string;
  expression: string;
  maxCalls: number;
  temperature: number;
  maxTokens: number;
  seed?: number;
}

export interface AgentEpisodeResult extends AgentAnswer {
  /** The episode id the gateway recorded this attempt's calls under (a retry records afresh). */
  recordedAs: string;
}

export interface WriteAgentSamplesInput {
  episodes: Array<{ recordedAs: string; episodeId: string; groupId?: string; reward: number }>;
  timeline: RunConfig['timeline'];
  weightVersion: number;
}

export function createAgentActivities({ store }: { store: BlobStore }) {
  return {
    async runAgentEpisode(input: RunAgentEpisodeInput): Promise<AgentEpisodeResult> {
      // Each attempt records under its own id, so a retried episode never mixes two attempts' calls.
      const recordedAs = `${input.episodeId}#a${Context.current().info.attempt}`;
      const client = new OpenAI({ baseURL: input.baseUrl, apiKey: 'none', maxRetries: 0, timeout: 60_000 });
      const answer = await solveArithmetic(client, input.expression, {
        model: input.model,
        episodeId: recordedAs,
        maxCalls: input.maxCalls,
        temperature: input.temperature,
        maxTokens: input.maxTokens,
        ...(input.seed !== undefined ? { seed: input.seed } : {}),
      });
      return { ...answer, recordedAs };
    },

    /** Each episode's recorded calls merged into samples (role 'single'), the episode's reward on each. */
    async writeAgentSamples(input: WriteAgentSamplesInput): Promise<SampleSetRef> {
      const samples: Sample[] = [];
      const counts = emptyCounts(input.timeline.snapDetection);
      const snaps: SnapReport[] = [];
      for (const e of input.episodes) {
        const timelines = await readEpisodeTimelines(store, e.recordedAs);
        const merged = mergeAgentTimelines(timelines, input.timeline);
        addCounts(counts, merged.counts);
        snaps.push(...merged.snaps);
        for (const s of merged.samples) {
          samples.push({
            ...s.sample,
            reward: e.reward,
            metadata: { role: 'single', episodeId: e.episodeId, turn: 1, weightVersion: input.weightVersion, ...(e.groupId !== undefined ? { groupId: e.groupId } : {}) },
          });
        }
      }
      return writeSet(store, 'single', samples, { counts, snaps });
    },
  };
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
