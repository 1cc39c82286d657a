/** Counts over timelines: what merging saved, and what a timeline will train on. */
import type { MergeStats, Timeline } from './types';

export interface TimelineStats {
  messages: number;
  tokens: number;
  /** Tokens of llm messages: what a sample built from the timeline trains on (loss mask 1). */
  llmTokens: number;
  llmMessages: number;
}

export function timelineStats(t: Timeline): TimelineStats {
  let tokens = 0;
  let llmTokens = 0;
  let llmMessages = 0;
  for (const m of t.messages) {
    tokens += m.tokenIds.length;
    if (m.author === 'llm') {
      llmTokens += m.tokenIds.length;
      llmMessages++;
    }
  }
  return { messages: t.messages.length, tokens, llmTokens, llmMessages };
}

export function mergeStats(input: readonly Timeline[], output: readonly Timeline[]): MergeStats {
  const sum = (ts: readonly Timeline[]) => {
    let tokens = 0;
    let messages = 0;
    for (const t of ts) {
      messages += t.messages.length;
      for (const m of t.messages) tokens += m.tokenIds.length;
    }
    return { tokens, messages };
  };
  const a = sum(input);
  const b = sum(output);
  return { timelinesIn: input.length, timelinesOut: output.length, tokensIn: a.tokens, tokensOut: b.tokens, messagesIn: a.messages, messagesOut: b.messages };
}
