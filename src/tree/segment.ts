/**
 * One tree node's generation, read as text (pure): how its segment ended, the context its children
 * continue from, and the tool call to run, if any. The tree-rollout workflow generates, runs the
 * call on the tools queue and records the result; everything it decides about the text is here,
 * beside the forest it grows.
 */
import type { FinishReason } from '../domain/types';
import { extractToolCall } from '../planact/actor-parser';
import { closeTurn, formatToolError, formatToolResult } from '../planact/protocol';
import type { SegmentEnd } from './types';

/** The text state after a node: what its children are prompted with. */
export interface SegmentText {
  /** Prompt plus every segment and tool result on the path, through this node. */
  context: string;
  /** Where each message of `context` begins (timeline capture). */
  starts: number[];
  /** The model's text of the turn this node is in, over every segment since the last tool result. */
  turnText: string;
  /** Tokens generated in that turn (bounded by maxNewTokens). */
  turnTokens: number;
}

export interface SegmentLimits {
  /** Cut a turn into segments of this many tokens (0: a segment is a whole turn). */
  segmentTokens: number;
  /** Tokens a turn may generate in all (rl.maxNewTokens). */
  maxNewTokens: number;
  /** Tool calls a path may make (tree.maxToolCallsPerNode). */
  maxToolCallsPerNode: number;
}

/** The generation of a node whose parent's text is `parent`: at most a segment, within the turn's budget. */
export function segmentBudget(parent: SegmentText, limits: SegmentLimits): number {
  return limits.segmentTokens > 0 ? Math.min(limits.segmentTokens, limits.maxNewTokens - parent.turnTokens) : limits.maxNewTokens;
}

export interface SegmentRead {
  end: SegmentEnd;
  /** The text after the node, without the tool's result (withToolOutcome adds it). */
  text: SegmentText;
  /** end 'tool-call': the expression to evaluate. */
  call?: { expression: string };
}

/**
 * What a generation means for the tree. `toolCallsAbove` is the parent's count of tool calls on the
 * path. A tool call may have begun in an earlier segment of the turn, so the whole turn is searched.
 */
export function readSegment(
  parent: SegmentText,
  toolCallsAbove: number,
  output: { text: string; finishReason: FinishReason; responseTokens: number },
  limits: SegmentLimits,
): SegmentRead {
  const turnText = parent.turnText + output.text;
  const turnTokens = parent.turnTokens + output.responseTokens;
  const starts = [...parent.starts, parent.context.length];
  // After a tool result the continuation starts a new turn; after a cut it goes on with this one.
  const newTurn = { turnText: '', turnTokens: 0 };
  if (output.finishReason === 'length') {
    const cut = limits.segmentTokens > 0 && turnTokens < limits.maxNewTokens;
    return { end: cut ? 'segment-length' : 'length', text: { context: parent.context + output.text, starts, ...(cut ? { turnText, turnTokens } : newTurn) } };
  }
  const call = extractToolCall(turnText, output.finishReason);
  if (call !== null) {
    // call.text is the whole turn with its closing tag; the earlier segments are already in the context.
    const context = parent.context + call.text.slice(parent.turnText.length);
    if (toolCallsAbove >= limits.maxToolCallsPerNode) return { end: 'tool-limit', text: { context, starts, ...newTurn } };
    return { end: 'tool-call', text: { context, starts: [...starts, context.length], ...newTurn }, call: { expression: call.expression } };
  }
  if (output.finishReason === 'eos') return { end: 'eos', text: { context: parent.context + closeTurn(output.text), starts, ...newTurn } };
  return { end: 'bad-tool-call', text: { context: parent.context + output.text, starts, ...newTurn } };
}

/** The text after a tool call once the tool answered: its result, or the error the actor is shown. */
export function withToolOutcome(text: SegmentText, outcome: { value: string } | { error: string }): SegmentText {
  return { ...text, context: text.context + ('value' in outcome ? formatToolResult(outcome.value) : formatToolError(outcome.error)) };
}
