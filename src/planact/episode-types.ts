/**
 * Inputs and outputs of the Plan/Act episode driver. All results are plain JSON so a workflow can
 * return them and a test can compare them.
 */
import type { AgentRole, FinishReason } from '../domain/types';
import type { PlanParseErrorCode } from './plan-parser';
import type { PlannedAct } from './protocol';
import type { PlanActTask } from './task';

export type PlanActRole = Extract<AgentRole, 'planner' | 'actor'>;

/** Everything a generate dependency needs to build its request and label the sample it yields. */
export interface GenerateMeta {
  episodeId: string;
  /** 1-based planner turn; an act's actor calls carry the turn that planned the act. */
  turn: number;
  actId?: string;
  /** 0-based generation index inside the act (each tool call starts a new one). */
  step: number;
  /** Stop strings for this call (the EOS token always stops generation as well). */
  stop: string[];
  maxNewTokens: number;
  /**
   * Where each message of the prompt begins, as character offsets (the first is 0): the task
   * prompt, every earlier model turn as it reads in context, every block of environment text.
   * Timeline capture splits the request into these messages (src/timeline).
   */
  messageStarts: number[];
}

/** The minimum a generate dependency returns; extra fields (token refs, logprobs) pass through. */
export interface GenerateOutput {
  text: string;
  finishReason: FinishReason;
}

export interface EpisodeDeps<G extends GenerateOutput = GenerateOutput> {
  generate(role: PlanActRole, prompt: string, meta: GenerateMeta): Promise<G>;
  /** The calculator (or any tool): rejects with an Error whose message is shown to the actor. */
  calc(expression: string): Promise<string>;
}

export interface EpisodeLimits {
  /** Planner turns, the answering turn included. */
  maxTurns: number;
  maxActsPerTurn: number;
  maxToolCallsPerAct: number;
  plannerMaxNewTokens: number;
  actorMaxNewTokens: number;
}

export const DEFAULT_EPISODE_LIMITS: EpisodeLimits = {
  maxTurns: 8,
  maxActsPerTurn: 4,
  maxToolCallsPerAct: 3,
  plannerMaxNewTokens: 64,
  actorMaxNewTokens: 32,
};

export interface EpisodeOptions<P> extends Partial<EpisodeLimits> {
  task: PlanActTask<P>;
  /** Labels generation requests; defaults to "episode". */
  episodeId?: string;
}

export type EpisodeFailureCode =
  | `plan-${PlanParseErrorCode}`
  | 'planner-length'
  | 'actor-length'
  | 'actor-bad-answer'
  | 'tool-call-limit'
  | 'max-turns';

export interface EpisodeFailure {
  code: EpisodeFailureCode;
  message: string;
  turn: number;
  actId?: string;
}

export interface ActRecord extends PlannedAct {
  /** The act's answer; absent when the act failed. */
  result?: string;
  toolCalls: number;
  /** Tool calls that returned an error to the actor. */
  toolFailures: number;
  generations: number;
  /** Prompt plus everything the actor and the environment wrote, EOS included when it finished. */
  transcript: string;
  failure?: EpisodeFailure;
}

export interface TurnRecord {
  turn: number;
  /** The planner's raw output for this turn. */
  planText: string;
  finishReason: FinishReason;
  kind: 'acts' | 'answer' | 'invalid';
  acts: ActRecord[];
  /** RESULT lines appended to the planner context after this turn ("" when none). */
  resultsText: string;
}

/** One request to the policy, in issue order per act; callers turn these into Samples. */
export interface GenerationRecord<G extends GenerateOutput = GenerateOutput> {
  role: PlanActRole;
  turn: number;
  actId?: string;
  step: number;
  prompt: string;
  completion: string;
  finishReason: FinishReason;
  output: G;
}

export interface EpisodeMetrics {
  turns: number;
  acts: number;
  toolCalls: number;
  toolFailures: number;
  generations: number;
  /** Largest number of acts run concurrently in one turn. */
  maxConcurrentActs: number;
}

export interface EpisodeResult<G extends GenerateOutput = GenerateOutput> {
  episodeId: string;
  status: 'answered' | 'failed';
  /** The planner's ANSWER value, null when it never answered. */
  finalAnswer: string | null;
  reward: number;
  failure?: EpisodeFailure;
  turns: TurnRecord[];
  /** Planner context after the last turn (closed with EOS), for rendering and debugging. */
  plannerTranscript: string;
  generations: Array<GenerationRecord<G>>;
  metrics: EpisodeMetrics;
}
