/** What merging did to a set of samples: the numbers a step's metrics and the Web UI show. */
import type { SnapReason } from './types';

export interface TimelineCounts {
  /** Policy calls captured (one timeline each): the samples there would be without merging. */
  captured: number;
  /** Samples after merging. */
  merged: number;
  /** Tokens (prompt and response) the captured timelines hold, and the merged samples. */
  tokensBefore: number;
  tokensAfter: number;
  /** Env messages given back the engine's ids (fixRetokenizationDrift). */
  driftRepaired: number;
  /** With snapDetection: survivors by why they part from their nearest neighbour. */
  snaps?: Partial<Record<SnapReason, number>>;
  /**
   * Chat episodes (task.chat): each episode's full-render check (src/chat checkConversation), its
   * mismatches by kind, and the model ids masked out because they could not be aligned.
   */
  chat?: Record<string, number>;
}

export function emptyCounts(withSnaps: boolean): TimelineCounts {
  return { captured: 0, merged: 0, tokensBefore: 0, tokensAfter: 0, driftRepaired: 0, ...(withSnaps ? { snaps: {} } : {}) };
}

/** Adds c into `into` (snaps only where `into` counts them). */
export function addCounts(into: TimelineCounts, c: TimelineCounts): void {
  into.captured += c.captured;
  into.merged += c.merged;
  into.tokensBefore += c.tokensBefore;
  into.tokensAfter += c.tokensAfter;
  into.driftRepaired += c.driftRepaired;
  if (into.snaps && c.snaps) {
    for (const [reason, n] of Object.entries(c.snaps) as Array<[SnapReason, number]>) into.snaps[reason] = (into.snaps[reason] ?? 0) + n;
  }
  if (c.chat) {
    into.chat ??= {};
    for (const [kind, n] of Object.entries(c.chat)) into.chat[kind] = (into.chat[kind] ?? 0) + n;
  }
}

/** The sum of several sets' counts; undefined when none was merged. */
export function sumCounts(counts: readonly TimelineCounts[]): TimelineCounts | undefined {
  if (counts.length === 0) return undefined;
  const total = emptyCounts(counts.some((c) => c.snaps !== undefined));
  for (const c of counts) addCounts(total, c);
  return total;
}
