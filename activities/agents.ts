/**
 * Agent episodes through the gateway: an agent (src/gateway/arith-agent.ts, official `openai`
 * client) solves one problem against an OpenAI-compatible gateway that records its calls, and the
 * recorded timelines of finished episodes are merged into training samples.
 */
import { resolveTokenizerDir } from '../src/model/tokenizer-dir';
import { ApplicationFailure, Context } from '@temporalio/activity';
import OpenAI from 'openai';
import type { RunConfig } from '../src/config/schema';
import type { RemoteEngineRef, Sample } from '../src/domain/types';
import { RemoteEngineRequestError } from '../src/engine/openai-engine';
import { loraModelName, servedWeightVersion } from '../src/engine/vllm-weights';
import { solveArithmetic, type AgentAnswer, type AgentFormat } from '../src/gateway/arith-agent';
import { checkApiKey } from '../src/gateway/api-key';
import { readEpisodeTimelines } from '../src/gateway/recorder';
import type { BlobStore } from '../src/store/blob-store';
import { addCounts, emptyCounts } from '../src/timeline/counts';
import type { SnapReport } from '../src/timeline/types';
import type { SampleSetRef } from '../src/contracts/sample-set';
import type { WeightsInfo } from '../src/contracts/weights';
import { REPO_ROOT } from '../src/paths';
import { AGENT_GATEWAY_MODEL, AgentGateways } from './agent-gateways';
import { AgentProxies } from './agent-proxies';
import { acceptedServedVersion } from './inference';
import { runAgentProcess } from './agent-process';
import { writeSampleSet } from '../src/contracts/sample-set';
import { mergeAgentTimelines } from '../src/timeline/agent-merge';

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
  /**
   * inference.engine openai: the server serving these weights (synced every step). The agent talks
   * chat to it through this worker's recording proxy instead of a gateway on the embedded engine.
   */
  remote?: RemoteEngineRef;
  /**
   * With remote, in chat mode (task.chat): the template's switches the run's episodes are rendered
   * with (`{enable_thinking}`), handed to the agent as DURABLE_RL_CHAT_TEMPLATE_KWARGS so its
   * requests render as chat SFT's demonstrations and evaluations do. Absent: the server's defaults.
   */
  chatTemplateKwargs?: Record<string, unknown>;
  /**
   * With remote, in chat mode: the run's tokenizer (task.chat.tokenizer: `qwen3` or a directory). The
   * recording proxy then keeps each conversation's ids and sends vLLM the kept ids and the rendered
   * delta (token-in/token-out, docs/gateway.md), so an episode merges into one sample even where the
   * template rewrites history.
   */
  chatTokenizer?: string;
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
  /** On a remote server: the weight version that served every call of the episode (absent: the input's). */
  weightVersion?: number;
}

export interface WriteAgentSamplesInput {
  episodes: Array<{ recordedAs: string; episodeId: string; groupId?: string; reward: number; weightVersion?: number }>;
  timeline: RunConfig['timeline'];
  /** The samples' weight version, unless an episode names its own. */
  weightVersion: number;
}

export function createAgentActivities({ store }: { store: BlobStore }) {
  // Made on first use: only tools workers that run rollout.kind: agent load engines or open proxies.
  let gateways: AgentGateways | undefined;
  let proxies: AgentProxies | undefined;
  return {
    /**
     * Runs the configured agent once, against this worker's gateway for the step's weights; the
     * gateway records its calls under the episode id (one per attempt).
     */
    async runAgentCommand(input: RunAgentCommandInput): Promise<AgentEpisodeResult> {
      const ctx = Context.current();
      const recordedAs = `${input.episodeId}#a${ctx.info.attempt}`;
      const run = (baseUrl: string, apiKey: string, model: string, format: AgentFormat) =>
        runAgentProcess({
          argv: input.command,
          cwd: REPO_ROOT,
          env: {
            OPENAI_BASE_URL: baseUrl,
            OPENAI_API_KEY: apiKey,
            DURABLE_RL_MODEL: model,
            DURABLE_RL_FORMAT: format,
            ...(format === 'chat' && input.chatTemplateKwargs ? { DURABLE_RL_CHAT_TEMPLATE_KWARGS: JSON.stringify(input.chatTemplateKwargs) } : {}),
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
        });
      if (input.remote) {
        proxies ??= new AgentProxies(store);
        const remote = input.remote;
        const baseUrl = await proxies.baseUrl(remote.baseUrl, input.chatTokenizer !== undefined ? resolveTokenizerDir(input.chatTokenizer) : undefined);
        const apiKey = proxies.apiKey;
        const { out, weightVersion } = await onServedVersion(remote, input.weights, () => run(baseUrl, apiKey, servedModelName(remote, input.weights), 'chat'));
        return { answer: out.answer, requests: out.requests ?? 0, recordedAs, weightVersion };
      }
      gateways ??= new AgentGateways(store);
      const out = await gateways.with(input.weights, input.maxSeq, (baseUrl, apiKey) => run(baseUrl, apiKey, AGENT_GATEWAY_MODEL, 'plan-act'));
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
            metadata: { role: 'single', episodeId: e.episodeId, turn: 1, weightVersion: e.weightVersion ?? input.weightVersion, ...(e.groupId !== undefined ? { groupId: e.groupId } : {}) },
          });
        }
      }
      return writeSampleSet(store, 'single', samples, { counts, snaps });
    },
  };
}

/** The name the agent asks a remote server for: a LoRA policy's adapter of exactly these weights (as inference.ts asks), else the served model. */
function servedModelName(remote: RemoteEngineRef, weights: WeightsInfo): string {
  return remote.synced && weights.lora && weights.hf ? loraModelName(remote.model, weights.hf.sha256) : remote.model;
}

/**
 * Runs an episode on a remote server and says which weights served it. A synced server's version is
 * read before the episode's first call and after its last (weights change only between requests,
 * activities/inference.ts): one version throughout, at least the wanted one, labels every call; a
 * server not synced yet, or one synced mid-episode, fails the attempt, and the retry records afresh.
 * A LoRA adapter is named after its weights, so its episodes are those weights'; an unsynced
 * server's are labelled with the input's.
 */
async function onServedVersion<T>(remote: RemoteEngineRef, weights: WeightsInfo, play: () => Promise<T>): Promise<{ out: T; weightVersion: number }> {
  if (!remote.synced || (weights.lora && weights.hf)) return { out: await play(), weightVersion: weights.version };
  const version = async (): Promise<string | null> => {
    try {
      return await servedWeightVersion(remote.baseUrl);
    } catch (err) {
      // A server without the endpoint fails the same on every retry.
      if (err instanceof RemoteEngineRequestError) throw ApplicationFailure.nonRetryable(err.message, 'RemoteEngineRequestError', { problem: err.problem, status: err.status });
      throw err;
    }
  };
  const before = await version();
  if (acceptedServedVersion(before, before, weights.version) === undefined) {
    throw new Error(`remote engine ${remote.baseUrl} serves weight version ${before}, wanted ${weights.version} or newer; retrying once the sync is done`);
  }
  const out = await play();
  const after = await version();
  const served = acceptedServedVersion(before, after, weights.version);
  if (served === undefined) throw new Error(`remote engine ${remote.baseUrl} changed weights during the episode (version ${before}→${after}); its calls are not one policy's, so the attempt is played again`);
  return { out, weightVersion: served };
}

/** The key of agentRollout's given gateway (`npm run gateway --api-key`), from DURABLE_RL_GATEWAY_API_KEY on the tools workers; 'none' for a keyless one. */
function gatewayApiKey(): string {
  const key = process.env[GATEWAY_API_KEY_ENV];
  return key === undefined ? 'none' : checkApiKey(key, GATEWAY_API_KEY_ENV);
}

export type AgentActivities = ReturnType<typeof createAgentActivities>;
