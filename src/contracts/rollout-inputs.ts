/** The inputs of the rollout workflows: Plan/Act (shared or dual), single-agent, and an outside agent's. */
import type { RunConfig } from '../config/schema';
import type { RemoteEngineRef } from '../domain/types';
import type { PlanActRoleName } from './plan-act-episode';
import type { PolicyRef, WeightsInfo } from './weights';

/** agentRollout's input: which gateway serves the policy the outside agent talks to. */
export interface AgentRolloutInput {
  runId: string;
  rolloutId: number;
  config: RunConfig;
  /** A gateway already serving the policy: the built-in openai-client agent plays against it. */
  gateway?: {
    /** Base URL of the OpenAI-compatible gateway, e.g. http://127.0.0.1:8000/v1. */
    baseUrl: string;
    model: string;
    /** The weights version it serves (written on the samples). */
    weightVersion: number;
  };
  /**
   * Or (rollout.kind: agent in trainingRun) a command run once per episode against a gateway the
   * tools worker serves on these weights.
   */
  agent?: {
    command: string[];
    timeoutSec: number;
    weights: WeightsInfo;
    /**
     * inference.engine openai: the synced server serving these weights. The tools worker puts its
     * recording proxy in front of it instead of a gateway of its own, and labels each episode with
     * the weight version the server served.
     */
    remote?: RemoteEngineRef;
  };
  /** Task queue of the workers that run agents; default the tools queue. */
  agentQueue?: string;
}

export interface PlanActRolloutInput {
  /** Owner of the samples (the job, or the session of a dual-mode rollout). */
  runId: string;
  rolloutId: number;
  /** Dynamic sampling's extra batches of a step: 1, 2, ... draw other prompts (absent = 0). */
  batch?: number;
  mode: 'shared' | 'dual';
  config: RunConfig;
  policies: Record<PlanActRoleName, PolicyRef>;
  /**
   * Episodes per child workflow: 1 gives every episode a workflow of its own (most to read in the
   * Web UI, most orchestration cost); default rl.groupSize, one child per GRPO group.
   */
  episodesPerWorkflow?: number;
}

export interface SingleAgentRolloutInput {
  runId: string;
  rolloutId: number;
  config: RunConfig;
  policy: PolicyRef;
  /** Why this rollout is single-agent (a job's fallback, or rollout.kind: standard), shown in the Web UI next to the child's input. */
  reason: string;
  /** Dynamic sampling's extra batches of new prompts (rollout.kind: standard); absent for the first. */
  batch?: number;
}
