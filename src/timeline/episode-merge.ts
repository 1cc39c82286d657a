/**
 * An episode's policy calls merged per agent: every call captured as a timeline (capture.ts), each
 * agent's timelines merged into samples (agent-merge.ts) and, given a value per call, each merged
 * sample's tokens credited to the call that wrote them (token-values.ts). The agent is the call's role.
 */
import type { AgentRole } from '../domain/types';
import { mergeAgentTimelines, type AgentMerge, type TimelineMergeConfig, type TrainableSample } from './agent-merge';
import { captureTimeline, type PromptMessage } from './capture';
import type { TimelineCounts } from './counts';
import { segmentTokenValues } from './token-values';
import type { Timeline } from './types';

/** What the merge reads of a call's token blob (src/contracts/generation.ts: CompletionTokens, which adds entropy). */
export interface CallTokens {
  promptTokenIds: number[];
  tokenIds: number[];
  logprobs: number[];
  /** The prompt's messages (absent in blobs written before timeline capture). */
  messages?: PromptMessage[];
  /** The output's text as later contexts render it. */
  outputText?: string;
}

/** How an episode names one of its calls (src/contracts/generation.ts: GenerationRef). */
export interface CallLabel {
  role: AgentRole;
  turn: number;
  actId?: string;
  /** Index of the call inside its act (tool rounds). */
  step?: number;
}

/** The tools list each agent is offered, as the chat template would render it. */
const TOOLS: Record<AgentRole, string> = { planner: '', actor: '[{"name":"calc"}]', single: '[{"name":"calc"}]' };

export interface MergedRole<G> extends Omit<AgentMerge, 'samples'> {
  /**
   * A sample per surviving timeline, with the call it ended on (its turn and act label the sample)
   * and every call merged into it, that one included, in capture order.
   */
  samples: Array<{ sample: TrainableSample; generation: G; merged: G[] }>;
}

/** Whether every call was captured (blobs written before capture carry no messages and cannot merge). */
export function allCaptured(tokens: readonly CallTokens[]): boolean {
  return tokens.every((t) => t.messages !== undefined && t.outputText !== undefined);
}

/** A call that could not be captured (a blob from before capture) is kept as its own sample. */
export function unmergedCounts(t: CallTokens): TimelineCounts {
  const tokens = t.promptTokenIds.length + t.tokenIds.length;
  return { captured: 1, merged: 1, tokensBefore: tokens, tokensAfter: tokens, driftRepaired: 0 };
}

/**
 * Captures every call of one episode (`tokens[i]` is the blob of `generations[i]`, all captured) and
 * merges each agent's timelines; with `segmentAdvantages` (a value per call) each sample's tokens
 * carry the value of the call that wrote them.
 */
export function mergeEpisode<G extends CallLabel>(
  generations: readonly G[],
  tokens: readonly CallTokens[],
  cfg: TimelineMergeConfig,
  segmentAdvantages?: readonly number[],
): Map<AgentRole, MergedRole<G>> {
  const byId = new Map<string, G>();
  const indexOf = new Map<string, number>();
  const timelines: Timeline[] = generations.map((g, i) => {
    const t = tokens[i]!;
    if (t.messages === undefined || t.outputText === undefined) throw new Error(`call ${i} (${g.role}, turn ${g.turn}) was not captured: it cannot be merged`);
    const id = `${i}:${g.role}/t${g.turn}${g.actId !== undefined ? `/act${g.actId}` : ''}/s${g.step ?? 0}`;
    byId.set(id, g);
    indexOf.set(id, i);
    return captureTimeline({
      id,
      agent: g.role,
      tools: TOOLS[g.role],
      prompt: t.messages,
      output: { text: t.outputText, tokenIds: t.tokenIds, logprobs: t.logprobs },
    });
  });
  const out = new Map<AgentRole, MergedRole<G>>();
  for (const role of [...new Set(generations.map((g) => g.role))]) {
    const merged = mergeAgentTimelines(
      timelines.filter((t) => t.agent === role),
      cfg,
      segmentAdvantages ? (t) => segmentTokenValues(t, segmentAdvantages, indexOf.get(t.id)!) : undefined,
    );
    out.set(role, {
      ...merged,
      samples: merged.samples.map((s) => ({
        sample: s.sample,
        generation: byId.get(s.timeline)!,
        merged: [...s.absorbed, s.timeline].sort((a, b) => indexOf.get(a)! - indexOf.get(b)!).map((id) => byId.get(id)!),
      })),
    });
  }
  return out;
}
