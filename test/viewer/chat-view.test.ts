/**
 * The viewer's chat episodes (src/viewer/chat-view.ts) over a chat run written by the real code path
 * (test/helpers/chat-viewer-fixture.ts: Qwen3's real tokenizer and template, the real episode driver
 * and TokenConversation, the real writeChatSamples): through the JSON API, each message with its role,
 * the tool call and the result that answers it, the malformed call, the thinking on its ids, the
 * full-render check's mismatches where they are (a thinking rewrite trained as generated, a `text`
 * difference masked out), the step's timelines.chat counts; older samples and broken references.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { writeSampleSet } from '../../src/contracts/sample-set';
import type { RolloutRecord } from '../../src/contracts/rollout-record';
import type { Sample } from '../../src/domain/types';
import { loadTokenizer } from '../../src/model/tokenizer';
import { getJson, putJson } from '../../src/store/blob-store';
import { names } from '../../src/store/run-names';
import { thinkingRanges } from '../../src/viewer/chat-view';
import { createViewer } from '../../src/viewer/server';
import type { ChatView, EpisodeView, SampleView, StepView } from '../../src/viewer/view-types';
import { CHAT_RUN, CHAT_STEP, SYSTEM_PROMPT, episodeIdOf, writeChatViewerFixture, type ChatFixture } from '../helpers/chat-viewer-fixture';
import { tempStore } from '../helpers/store';

let app: FastifyInstance;
let base = '';
let store: ReturnType<typeof tempStore>;
let fixture: ChatFixture;

beforeAll(async () => {
  store = tempStore('chat-view');
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-chat-view-runs-'));
  fixture = await writeChatViewerFixture(store, runsDir);
  // The viewer's own tokenizer is the project's: chat samples must be read with the one they name.
  app = createViewer({ store, runsDir, tokenizer: loadTokenizer(), links: { uiUrl: 'http://localhost:8233', namespace: 'default' } });
  base = await app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);

afterAll(async () => {
  await app?.close();
});

async function get<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(base + url);
  return { status: res.status, body: (await res.json()) as T };
}

async function episode(i: number, step = CHAT_STEP): Promise<SampleView & { chat: ChatView }> {
  const { status, body } = await get<EpisodeView>(`/api/runs/${CHAT_RUN}/steps/${step}/episode?id=${encodeURIComponent(episodeIdOf(i))}`);
  expect(status).toBe(200);
  expect(body.samples).toHaveLength(1);
  return body.samples[0] as SampleView & { chat: ChatView };
}

const decode = (ids: number[]) => fixture.model.tokenizer.decode(ids);
const keptIds = (i: number) => fixture.kept[i]!.conversation.ids;

test('a multi-turn chat episode shows each message with its role, the tool call and the result answering it, the malformed call and the thinking', async () => {
  const s = await episode(0);
  const c = s.chat;
  expect(c).toMatchObject({ tokenizer: 'qwen3', enableThinking: true });
  expect(c.blocks.map((b) => [b.source, b.messages.map((m) => m.role)])).toEqual([
    ['prompt', ['system', 'user']],
    ['model', ['assistant']],
    ['env', ['tool']],
    ['model', ['assistant']],
    ['env', ['user']],
    ['model', ['assistant']],
  ]);
  const [prompt, call, result, bad, complaint, answer] = c.blocks.map((b) => b.messages[0]!);
  expect(prompt!.content).toBe(SYSTEM_PROMPT);
  expect(c.blocks[0]!.messages[1]!.content).toBe('Compute: 17+25');
  expect(call).toMatchObject({ reasoning: '\nI will use the calculator.\n', content: '', toolCalls: [{ id: 'call_1_0', name: 'calc', arguments: '{"expression": "17+25"}' }] });
  expect(call!.malformed).toBeUndefined();
  expect(result).toEqual({ role: 'tool', content: '42', answers: { id: 'call_1_0', name: 'calc', arguments: '{"expression": "17+25"}' } });
  // vLLM returns no calls for a turn whose block does not parse: the text stays content, the problem is named.
  expect(bad!.toolCalls).toBeUndefined();
  expect(bad!.malformed).toEqual([expect.objectContaining({ kind: 'bad-json', index: 0 })]);
  expect(bad!.content).toContain('"expression": 17+25');
  expect(complaint!.content).toMatch(/^Your tool call could not be read \(bad-json\)/);
  expect(answer).toMatchObject({ reasoning: '\nThe calculator said 42.\n', content: '\n\n42' });
  expect(c.blocks.filter((b) => b.source === 'model').map((b) => [b.turn, b.weightVersion])).toEqual([[1, 4], [2, 4], [3, 4]]);

  // The blocks cover the kept ids in order; each block's ids are the ones its messages were rendered or generated as.
  const ids = keptIds(0);
  expect(c.blocks[0]!.start).toBe(0);
  expect(c.blocks.at(-1)!.end).toBe(ids.length);
  c.blocks.slice(1).forEach((b, k) => expect(b.start).toBe(c.blocks[k]!.end));
  expect(decode(ids.slice(c.blocks[2]!.start, c.blocks[2]!.end))).toContain('<tool_response>\n42\n</tool_response>');
  // The page draws prompt pieces before promptLength and response pieces after: model blocks are trained, environment blocks not.
  expect(c.promptLength).toBe(c.blocks[1]!.start);
  for (const b of c.blocks.slice(1)) {
    const masks = s.response.slice(b.start - c.promptLength, b.end - c.promptLength).map((p) => p.m);
    expect(new Set(masks)).toEqual(new Set([b.source === 'model' ? 1 : 0]));
  }
  // Thinking: the ids of each turn's <think> block, and nothing else.
  expect(c.thinking.map(([a, b]) => decode(ids.slice(a, b)))).toEqual([
    '<think>\nI will use the calculator.\n</think>',
    '<think>\nLet me check it once more.\n</think>',
    '<think>\nThe calculator said 42.\n</think>',
  ]);
});

test("the full-render check's mismatches sit on their ids: Qwen3's dropped thinking is a thinking-rewrite, trained as generated", async () => {
  const c = (await episode(0)).chat;
  const ids = keptIds(0);
  expect(c.mismatches.map((m) => [m.kind, m.masked])).toEqual([
    ['thinking-rewrite', false],
    ['thinking-rewrite', false],
  ]);
  const [first, second] = c.mismatches;
  // The two turns before the last user message lose their thinking in a full render; the last keeps it.
  expect(decode(ids.slice(first!.kept[0], first!.kept[1]))).toBe('<think>\nI will use the calculator.\n</think>\n\n');
  expect(first!.keptText).toBe('<think>\nI will use the calculator.\n</think>\n\n');
  expect(first!.expectedText).toBe('');
  expect(decode(ids.slice(second!.kept[0], second!.kept[1]))).toContain('<think>\nLet me check it once more.\n</think>');
  expect(first!.kept[0]).toBe(c.blocks[1]!.start);
  expect(c.counts).toMatchObject({ 'thinking-rewrite': 2, text: 0 });
  expect(c.unalignedModelIds).toBe(0);
});

test('a model id a full render cannot align is a `text` mismatch, masked out of the loss, and shown so', async () => {
  const s = await episode(1);
  const c = s.chat;
  expect(c.mismatches).toEqual([expect.objectContaining({ kind: 'text', keptText: '<|im_start|>', expectedText: '', modelIds: 1, masked: true })]);
  const [m] = c.mismatches;
  const model = c.blocks.find((b) => b.source === 'model')!;
  expect(m!.kept[0]).toBeGreaterThanOrEqual(model.start);
  expect(m!.kept[1]).toBeLessThanOrEqual(model.end);
  // The model wrote it (kept id), the sample does not train it.
  expect(keptIds(1)[m!.kept[0]]).toBe(s.response[m!.kept[0] - c.promptLength]!.id);
  expect(s.response[m!.kept[0] - c.promptLength]!.m).toBe(0);
  expect(c.unalignedModelIds).toBe(1);
  // vLLM's qwen3 parser drops <|im_start|> from the message the server holds.
  expect(model.messages[0]!.content).toBe('\n\nThe answer is 42');
});

test("the step shows the chat samples decoded with their own tokenizer, the Hermes tool calls, the chat rollout's workflow and timelines.chat", async () => {
  const { status, body: step } = await get<StepView>(`/api/runs/${CHAT_RUN}/steps/${CHAT_STEP}`);
  expect(status).toBe(200);
  expect(step.chatCheck).toEqual(fixture.set.timelines!.chat);
  expect(step.chatCheck).toMatchObject({ 'thinking-rewrite': 2, text: 1, unalignedModelIds: 1 });
  expect(step.groups[0]!.prompt).toContain('<|im_start|>user\nCompute: 17+25<|im_end|>');
  const [e0, e1] = step.groups[0]!.episodes;
  // Two `<tool_call>` blocks written in episode 0 (the malformed one too), none in episode 1.
  expect([e0!.toolCalls, e1!.toolCalls]).toEqual([2, 0]);
  expect(e0).toMatchObject({ shape: 'chat', workflowId: `${CHAT_RUN}/chat-rollout-1`, reward: 1 });
});

test("a step without a metrics line (none for that RL step) takes timelines.chat from its record's sample sets", async () => {
  const step = CHAT_STEP + 4;
  const record = await getJson<RolloutRecord>(store, (await store.getName(names.rolloutRecord(CHAT_RUN, CHAT_STEP)))!);
  await store.nameIfAbsent(names.rolloutRecord(CHAT_RUN, step), await putJson(store, { ...record, step }, 'rollout-record'));
  const { body } = await get<StepView>(`/api/runs/${CHAT_RUN}/steps/${step}`);
  expect(body.metrics).toBeUndefined();
  expect(body.chatCheck).toEqual(fixture.set.timelines!.chat);
});

test('chat samples written before they named their conversation: refused with the wrong tokenizer, token timelines with their own', async () => {
  const { samples } = await getJson<{ samples: Sample[] }>(store, fixture.set.ref);
  const old = samples.map(({ metadata: { chat: _chat, ...metadata }, ...rest }) => ({ ...rest, metadata }));
  const step = await writeStep(CHAT_STEP + 1, old);
  const url = `/api/runs/${CHAT_RUN}/steps/${step}/episode?id=${encodeURIComponent(episodeIdOf(0))}`;
  // The viewer's default (the project's 300-id tokenizer) cannot read Qwen3 ids: a typed answer, not a page of nothing.
  const refused = await get<{ error: string; message: string }>(url);
  expect(refused).toMatchObject({ status: 502, body: { error: 'tokenizer-mismatch' } });
  expect(refused.body.message).toContain('--tokenizer');
  // Started with the run's tokenizer (npm run viewer -- --tokenizer qwen3), the samples show as timelines.
  const qwen = createViewer({ store, runsDir: fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-chat-view-runs-')), tokenizer: fixture.model.tokenizer, links: { namespace: 'default' } });
  const qwenBase = await qwen.listen({ host: '127.0.0.1', port: 0 });
  try {
    const view = (await (await fetch(qwenBase + url)).json()) as EpisodeView;
    const s = view.samples[0]!;
    expect(s.chat).toBeUndefined();
    expect(s.response.map((p) => p.id)).toEqual(samples[0]!.responseTokens);
    expect(s.response.map((p) => p.t).join('')).toBe(decode(samples[0]!.responseTokens));
  } finally {
    await qwen.close();
  }
});

test('a chat sample whose kept episode is missing, or holds other ids, is a 502 naming it', async () => {
  const { samples } = await getJson<{ samples: Sample[] }>(store, fixture.set.ref);
  const missing = { sha256: 'ab'.repeat(32), bytes: 10, kind: 'chat-episode' };
  const gone = await writeStep(CHAT_STEP + 2, samples.map((s) => ({ ...s, metadata: { ...s.metadata, chat: { ...s.metadata.chat!, episode: missing } } })));
  const a = await get<{ error: string; message: string }>(`/api/runs/${CHAT_RUN}/steps/${gone}/episode?id=${encodeURIComponent(episodeIdOf(0))}`);
  expect(a).toMatchObject({ status: 502, body: { error: 'blob-missing' } });
  expect(a.body.message).toContain(missing.sha256);
  // Episode 0's sample naming episode 1's conversation.
  const swapped = await writeStep(CHAT_STEP + 3, samples.map((s) => ({ ...s, metadata: { ...s.metadata, chat: { ...s.metadata.chat!, episode: fixture.episodeRefs[1]! } } })));
  const b = await get<{ error: string; message: string }>(`/api/runs/${CHAT_RUN}/steps/${swapped}/episode?id=${encodeURIComponent(episodeIdOf(0))}`);
  expect(b).toMatchObject({ status: 502, body: { error: 'blob-unreadable' } });
  expect(b.body.message).toContain('does not hold the ids of the kept episode');
});

test('thinking ranges: a block the prompt opens and the model closes is one block; an unclosed one runs to the end', () => {
  expect(thinkingRanges(['a', '<think>', '\n', 'x', '</think>', 'b', '<think>', 'y'])).toEqual([
    [1, 5],
    [6, 8],
  ]);
  expect(thinkingRanges(['no ', 'thinking'])).toEqual([]);
});

/** Records another update of the chat run over these samples (the same credit as the fixture's step). */
async function writeStep(step: number, samples: Sample[]): Promise<number> {
  const set = await writeSampleSet(store, 'single', samples);
  const record: RolloutRecord = {
    version: 1,
    runId: CHAT_RUN,
    step,
    policyVersion: 4,
    policyVersionKnown: true,
    objective: 'grpo',
    sets: [set],
    credit: samples.map(() => ({ advantage: 0, status: 'trained' as const })),
    normAdvByStd: true,
    advantageNorm: 'episode',
  };
  await store.nameIfAbsent(names.rolloutRecord(CHAT_RUN, step), await putJson(store, record, 'rollout-record'));
  return step;
}
