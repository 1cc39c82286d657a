/**
 * Timelines: what the policy saw and wrote in one request, message by message.
 *
 * Every request an agent sends to the policy during an episode is captured as one timeline (its
 * input messages, then its output). Consecutive requests of a multi-turn agent repeat each other's
 * prefixes, so training on every request would train on the same tokens many times; merging
 * (merge.ts) keeps only the timelines no other one extends, with the model's own tokens marked.
 * Plain data: nothing here touches Temporal, Node or the clock.
 */

/** Who wrote a message: the model (trained on) or anything else (system, user, tool, template). */
export type Author = 'llm' | 'env';

export interface TimelineMessage {
  author: Author;
  /** Text as rendered into the model's context by the chat template. */
  text: string;
  /** Token ids of this message: for llm messages the ids the engine returned. */
  tokenIds: number[];
  /** One per token: the engine's logprob for llm messages, 0 for env messages. */
  logprobs: number[];
}

export interface Timeline {
  /** Unique within the timelines merged together (an episode or a batch). */
  id: string;
  /** Agent name; merging happens within one agent only. */
  agent: string;
  /** Canonical text of the tools list offered ('' for none). */
  tools: string;
  /** Input messages, then the request's output (author llm) last. */
  messages: TimelineMessage[];
}

/**
 * How two messages are judged equal. `text` (the default) tolerates retokenization drift: the same
 * text re-encoded to other ids still matches. `token` demands the very same ids.
 */
export type CompareBy = 'text' | 'token';

export interface MergeOptions {
  compareBy: CompareBy;
  /** Merge timelines whose tools lists differ (the list is rendered before message 0). */
  ignoreTools: boolean;
  /** Report, for each surviving timeline, where and why it parts from its nearest neighbour. */
  snapDetection: boolean;
}

/** AgentJet's defaults: compare by text, ignore tools, no snap detection (it costs time). */
export const DEFAULT_MERGE_OPTIONS: Readonly<MergeOptions> = { compareBy: 'text', ignoreTools: true, snapDetection: false };

/**
 * Why a surviving timeline parts from its partner (see snap.ts for when each is reported):
 * - text: the texts differ at messageIndex (and it is not an edited model output, see author);
 * - tokens: the texts are equal at messageIndex but the token ids differ (compareBy token only);
 * - author: the messages differ at messageIndex and one of them is the model's own output (llm)
 *   while the other is env text in its place: the framework fed the reply back altered;
 * - tools: every compared message is equal but the tools lists differ (ignoreTools false only);
 * - length: every compared message is equal and one timeline simply ends.
 */
export type SnapReason = 'text' | 'tokens' | 'tools' | 'author' | 'length';

export interface SnapReport {
  /** The surviving timeline reported on. */
  timeline: string;
  /** The other survivor of the same agent that shares the longest message prefix with it. */
  other: string;
  agent: string;
  /** How many leading messages the two share: the index of the first differing message, or the shorter length. */
  messageIndex: number;
  reason: SnapReason;
}

export interface MergeStats {
  timelinesIn: number;
  timelinesOut: number;
  /** Token ids over all messages of all timelines. */
  tokensIn: number;
  tokensOut: number;
  messagesIn: number;
  messagesOut: number;
}

export interface MergeResult {
  /** The survivors (absorbed into no other timeline), in input order, as fresh copies. */
  timelines: Timeline[];
  /** Each absorbed timeline, in input order, with the survivors it is a prefix of (in input order). */
  absorbed: Array<{ id: string; into: string[] }>;
  /** One per survivor that has a partner, in survivor order; [] unless snapDetection. */
  snaps: SnapReport[];
  stats: MergeStats;
}
