/**
 * A chat episode's sample as its conversation (task.chat; docs/viewer.md). Nothing is parsed again:
 * the sample names the kept episode chatTurn stored (src/chat TokenConversation's state: the ids,
 * which runs of them the first prompt, the model and the environment wrote, the messages as vLLM's
 * server holds them, each model turn's parse as vLLM parses it) and the full-render check
 * writeChatSamples ran on it. This cuts the ids into those runs, hangs each run's messages on it,
 * pairs tool results with the calls they answer, and places the thinking and the check's
 * mismatches on the ids. Pure: the server reads the blobs.
 */
import type { AssistantMessage, ChatMessage, TokenConversationSnapshot, ToolCallProblem } from '../chat';
import type { KeptEpisode, StoredCheck } from '../chat/kept-episode';
import type { ChatSampleRef, Sample } from '../domain/types';
import type { TextTokenizer } from '../model/tokenizer-types';
import { ViewerError } from './errors';
import { tokenTexts } from './tokens';
import type { ChatBlockView, ChatMessageView, ChatView } from './view-types';

export function chatView(sample: Sample, ref: ChatSampleRef, kept: KeptEpisode, check: StoredCheck, tok: TextTokenizer): ChatView {
  const conv = kept.conversation;
  const ids = [...sample.promptTokens, ...sample.responseTokens];
  if (ids.length !== conv.ids.length || ids.some((id, i) => id !== conv.ids[i])) {
    throw new ViewerError(502, 'blob-unreadable', `the sample of ${sample.metadata.episodeId} does not hold the ids of the kept episode it names (blob ${ref.episode.sha256})`);
  }
  return {
    tokenizer: ref.tokenizer,
    enableThinking: ref.enableThinking,
    promptLength: sample.promptTokens.length,
    blocks: blocks(conv, kept.weightVersions),
    thinking: thinkingRanges(tokenTexts(tok, conv.ids)),
    mismatches: check.mismatches.map((m) => ({ kind: m.kind, kept: m.kept, keptText: m.keptText, expectedText: m.expectedText, modelIds: m.modelIds, masked: m.kind === 'text' })),
    counts: check.counts,
    unalignedModelIds: check.unalignedModelIds,
  };
}

/**
 * The runs of ids in order, each with its messages: the conversation's messages before the first
 * assistant message were the first prompt, each assistant message is a model turn, the messages
 * after it the environment delta that followed. A turn cut by the length limit is closed by one
 * environment id (TokenConversation.addModelTurn): it joins the delta after it.
 */
function blocks(conv: TokenConversationSnapshot, weightVersions: readonly number[]): ChatBlockView[] {
  const assistants: AssistantMessage[] = [];
  const between: ChatMessage[][] = [[]];
  for (const m of conv.messages) {
    if (m.role === 'assistant') {
      assistants.push(m);
      between.push([]);
    } else between.at(-1)!.push(m);
  }
  const out: ChatBlockView[] = [];
  let turns = 0;
  for (const span of conv.spans) {
    if (span.source === 'model') {
      const parse = conv.turns[turns];
      out.push({
        source: 'model',
        start: span.start,
        end: span.end,
        messages: [assistantView(assistants[turns]!, parse?.malformed ?? [])],
        turn: turns + 1,
        ...(weightVersions[turns] !== undefined ? { weightVersion: weightVersions[turns] } : {}),
      });
      turns++;
      continue;
    }
    const last = out.at(-1);
    if (last !== undefined && last.source !== 'model') {
      last.end = span.end;
      continue;
    }
    out.push({ source: span.source, start: span.start, end: span.end, messages: envViews(between[turns] ?? [], assistants[turns - 1]) });
  }
  return out;
}

function assistantView(m: AssistantMessage, malformed: readonly ToolCallProblem[]): ChatMessageView {
  return {
    role: 'assistant',
    content: m.content,
    ...(m.reasoning_content !== undefined ? { reasoning: m.reasoning_content } : {}),
    ...(m.tool_calls && m.tool_calls.length > 0 ? { toolCalls: m.tool_calls.map((c) => ({ ...(c.id !== undefined ? { id: c.id } : {}), name: c.function.name, arguments: argumentsText(c.function.arguments) })) } : {}),
    ...(malformed.length > 0 ? { malformed: [...malformed] } : {}),
  };
}

/** Environment messages; a tool result answers the previous turn's call with its tool_call_id, else the call in its place (OpenAI's order). */
function envViews(messages: readonly ChatMessage[], previous: AssistantMessage | undefined): ChatMessageView[] {
  const calls = previous?.tool_calls ?? [];
  let nth = 0;
  return messages.map((m): ChatMessageView => {
    if (m.role !== 'tool') return { role: m.role, content: m.content };
    const call = (m.tool_call_id !== undefined ? calls.find((c) => c.id === m.tool_call_id) : undefined) ?? calls[nth];
    nth++;
    return {
      role: 'tool',
      content: m.content,
      ...(call ? { answers: { ...(call.id !== undefined ? { id: call.id } : {}), name: call.function.name, arguments: argumentsText(call.function.arguments) } } : {}),
    };
  });
}

function argumentsText(args: string | Record<string, unknown>): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

const THINK_BLOCK = /<think>[\s\S]*?(?:<\/think>|$)/g;

/**
 * The ids inside `<think>…</think>` blocks of the conversation's text (the one the model saw: a
 * block the generation prompt opens and the model closes is one block), an unclosed one to the end.
 */
export function thinkingRanges(texts: readonly string[]): Array<[number, number]> {
  const starts: number[] = [];
  let at = 0;
  for (const t of texts) {
    starts.push(at);
    at += t.length;
  }
  const text = texts.join('');
  const out: Array<[number, number]> = [];
  for (const m of text.matchAll(THINK_BLOCK)) {
    const from = m.index;
    const to = from + m[0].length;
    // Ids whose text overlaps [from, to): an id's text is [starts[i], starts[i] + length).
    const first = starts.findIndex((s, i) => s + texts[i]!.length > from);
    if (first < 0) continue;
    let last = first;
    while (last + 1 < texts.length && starts[last + 1]! < to) last++;
    out.push([first, last + 1]);
  }
  return out;
}
