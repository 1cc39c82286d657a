/**
 * A Plan/Act episode as the episode workflows take and return it: its input, and the digest of its
 * turns, acts and tool calls that the Web UI shows. Token arrays stay in the blob store; only
 * references, counts and short text travel here.
 */
import type { RunConfig } from '../config/schema';
import type { EpisodeFailure, EpisodeLimits } from '../planact/episode-types';
import type { ToolMetrics } from './rollout-summary';
import type { SampleSets } from './sample-set';
import type { PolicyRef } from './weights';

export type PlanActRoleName = 'planner' | 'actor';

export interface ActDigest {
  id: string;
  expression: string;
  /** The act's answer as the planner reads it in its RESULT line. */
  result?: string;
  failure?: string;
  toolCalls: number;
  toolFailures: number;
  /** When the act started and ended, ms after the episode started (workflow time). */
  startMs: number;
  endMs: number;
}

export interface TurnDigest {
  turn: number;
  /** The planner's text for this turn, as generated (shortened when long). */
  plan: string;
  kind: 'acts' | 'answer' | 'invalid';
  acts: ActDigest[];
  /** RESULT lines appended to the planner's context after the acts. */
  results: string;
}

export interface EpisodeRunMetrics {
  turns: number;
  acts: number;
  generations: number;
  maxConcurrentActs: number;
  tools: ToolMetrics;
  episodeMs: number;
  /** Sum of act durations; above the turn's wall time when acts overlapped. */
  actMsTotal: number;
}

export interface PlanActEpisodeInput {
  /** How the episode's timelines are merged into samples (absent: one sample per call, as before capture). */
  timeline?: RunConfig['timeline'];
  /** Owner of the samples (a job or session id); used in blob names and episode ids. */
  runId: string;
  episodeId: string;
  /** Arithmetic problem, canonical form ("17+25+8"). */
  expression: string;
  /** GRPO group: episodes of the same prompt share it. */
  groupId?: string;
  policies: Record<PlanActRoleName, PolicyRef>;
  limits: EpisodeLimits;
  sampling: { temperature: number; topP: number };
  /** Seeds every generation of the episode (see src/planact/sampling-seed.ts); absent = unseeded. */
  seed?: number;
  timeouts: RunConfig['timeouts'];
  /** rollout.plannerCredit correct-results (absent: outcome, as episodes recorded before it). */
  plannerCredit?: 'correct-results';
  /** rollout.batchRequests false: one activity per call; 'local': each call a local activity (absent: the calls of an activation batched). */
  batchRequests?: false | 'local';
}

export interface PlanActEpisodeResult extends PlanActEpisodeDigest {
  samples: SampleSets;
}

/** A GRPO group's episodes, run in one workflow, with one sample set per role for all of them. */
export interface PlanActGroupResult {
  episodes: PlanActEpisodeDigest[];
  samples: SampleSets;
}

export interface PlanActEpisodeDigest {
  episodeId: string;
  expression: string;
  expected: number;
  status: 'answered' | 'failed';
  answer: string | null;
  reward: number;
  /** Why the episode ended without a correct-format answer (malformed plan, runaway length, ...). */
  failure?: EpisodeFailure;
  turns: TurnDigest[];
  metrics: EpisodeRunMetrics;
  /** rollout.plannerCredit correct-results: an actor's RESULT was wrong, so the planner's samples were left out. */
  plannerNotTrained?: true;
}
