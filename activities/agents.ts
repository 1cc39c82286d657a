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
import { checkApiKey } from '../src/gateway/api-key';
import { readEpisodeTimelines } from '../src/gateway/recorder';
import type { BlobStore } from '../src/store/blob-store';
import { addCounts, emptyCounts } from '../src/timeline/counts';
import type { SnapReport } from '../src/timeline/types';
import type { SampleSetRef } from '../src/contracts/plan-act';
import type { WeightsInfo } from '../src/contracts/weights';
import { REPO_ROOT } from '../src/paths';
import { AGENT_GATEWAY_MODEL, AgentGateways } from './agent-gateways';
import { runAgentProcess } from './agent-process';
import { writeSet } from './samples';
import { mergeAgentTimelines } from './timeline-merge';

/** Where the tools workers find the key of the gateway an agentRollout input names. */
export const GATEWAY_API_KEY_ENV = 'DURABLE_RL_GATEWAY_API_KEY';

export interface RunAgentEpisodeInput {
  /** The gateway's base URL, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: string;
  model: string;
  episodeId: string;
  expression: string;
  maxCalls: number;
  temperature: number;
  /** rl.topP; absent when it is 1 (and in inputs recorded before the key reached agents). */
  topP?: number;
  maxTokens: number;
  seed?: number;
}

/** One episode of a configured agent command (rollout.kind: agent) against a gateway on these weights. */
export interface RunAgentCommandInput {
  command: string[];
  timeoutSec: number;
  weights: WeightsInfo;
  /** The model's context length (the gateway's limit). */
  maxSeq: number;
  episodeId: string;
  expression: string;
  maxCalls: number;
  temperature: number;
  /** rl.topP; absent when it is 1 (and in inputs recorded before the key reached agents). */
  topP?: number;
  maxTokens: number;
  seed: number;
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
  // Made on first use: only tools workers that run rollout.kind: agent load engines.
  let gateways: AgentGateways | undefined;
  return {
    /**
     * Runs the configured agent once, against this worker's gateway for the step's weights; the
     * gateway records its calls under the episode id (one per attempt).
     */
    async runAgentCommand(input: RunAgentCommandInput): Promise<AgentEpisodeResult> {
      const ctx = Context.current();
      const recordedAs = `${input.episodeId}#a${ctx.info.attempt}`;
      gateways ??= new AgentGateways(store);
      const out = await gateways.with(input.weights, input.maxSeq, (baseUrl, apiKey) => runAgentProcess({
        argv: input.command,
        cwd: REPO_ROOT,
        env: {
          OPENAI_BASE_URL: baseUrl,
          OPENAI_API_KEY: apiKey,
          DURABLE_RL_MODEL: AGENT_GATEWAY_MODEL,
          DURABLE_RL_EPISODE_ID: recordedAs,
          DURABLE_RL_PROBLEM: input.expression,
          DURABLE_RL_TEMPERATURE: String(input.temperature),
          ...(input.topP !== undefined ? { DURABLE_RL_TOP_P: String(input.topP) } : {}),
          DURABLE_RL_MAX_TOKENS: String(input.maxTokens),
          DURABLE_RL_MAX_CALLS: String(input.maxCalls),
          DURABLE_RL_SEED: String(input.seed),
        },
        timeoutMs: input.timeoutSec * 1000,
        signal: ctx.cancellationSignal,
        onBeat: () => ctx.heartbeat(),
      }));
      return { answer: out.answer, requests: out.requests ?? 0, recordedAs };
    },


    async runAgentEpisode(input: RunAgentEpisodeInput): Promise<AgentEpisodeResult> {
      // Each attempt records under its own id, so a retried episode never mixes two attempts' calls.
      const recordedAs = `${input.episodeId}#a${Context.current().info.attempt}`;
      // The gateway's key comes from the worker's environment, never from the input (histories are not secret).
      const client = new OpenAI({ baseURL: input.baseUrl, apiKey: gatewayApiKey(), maxRetries: 0, timeout: 60_000 });
      const answer = await solveArithmetic(client, input.expression, {
        model: input.model,
        episodeId: recordedAs,
        maxCalls: input.maxCalls,
        temperature: input.temperature,
        ...(input.topP !== undefined ? { topP: input.topP } : {}),
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

/** The key of agentRollout's given gateway (`npm run gateway --api-key`), from DURABLE_RL_GATEWAY_API_KEY on the tools workers; 'none' for a keyless one. */
function gatewayApiKey(): string {
  const key = process.env[GATEWAY_API_KEY_ENV];
  return key === undefined ? 'none' : checkApiKey(key, GATEWAY_API_KEY_ENV);
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
