/**
 * The recording proxy (src/gateway/upstream-proxy.ts) in front of a real vLLM (the CPU build setup
 * installs, started as test/engine/vllm-server.test.ts starts it) serving this project's policy
 * exported as a Hugging Face directory, with its Plan/Act chat template. Agents talk to it with the
 * official `openai` client: the recorded timelines carry the ids and logprobs vLLM returned, split
 * at the template's message boundaries; a multi-turn episode merges into one sample; the client
 * reads exactly the response vLLM gives it without the proxy; vLLM's errors come back as vLLM
 * sent them.
 *
 * The test policy has random weights, so its text is noise: non-ASCII ids are biased away (their
 * bytes make unreadable failures) and the end-of-turn id favoured, so turns end as a trained
 * policy's do. vLLM's tool calling needs a tool parser, and none of vLLM's parsers reads the
 * Plan/Act `<calc>` syntax: `tools` is refused by vLLM here, and tool calls are checked as history
 * the template renders.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { mergeAgentTimelines } from '../../src/timeline/agent-merge';
import { freePort } from '../../scripts/lib/dev-server';
import { startVllm, type RunningVllm } from '../../scripts/lib/vllm-server';
import { TimelineSchema } from '../../src/config/schema';
import { solveArithmetic } from '../../src/gateway/arith-agent';
import { blobStoreRecorder, readEpisodeTimelines } from '../../src/gateway/recorder';
import { createRecordingProxy } from '../../src/gateway/upstream-proxy';
import type { GptConfig } from '../../src/model/arch';
import { writeHfDir } from '../../src/model/hf-dir';
import { loadTokenizer } from '../../src/model/tokenizer';
import type { FsBlobStore } from '../../src/store/fs-blob-store';
import type { Timeline } from '../../src/timeline/types';
import { sharpWeights } from '../model/helpers';
import { tempStore } from '../helpers/store';

const tok = loadTokenizer();
// vLLM's CPU attention needs head sizes of 32 and up.
const cfg: GptConfig = { vocabSize: tok.vocabSize, dModel: 64, nLayers: 2, nHeads: 2, dFf: 128, maxSeq: 192 };
const MODEL = 'policy';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'upstream-vllm-'));
let vllm: RunningVllm;
let store: FsBlobStore;
let proxy: ReturnType<typeof createRecordingProxy>;
let proxyBase: string;
let direct: OpenAI;
const notices: string[] = [];

/** Every id whose text is not printable ASCII, and the padding id, never sampled; the end of turn favoured. */
const LOGIT_BIAS: Record<string, number> = { [tok.eosId]: 1 };
for (let id = 0; id < tok.vocabSize; id++) {
  if (id !== tok.eosId && (tok.decode([id]) === '<|pad|>' || !/^[\x20-\x7e\n]+$/.test(tok.decode([id])))) LOGIT_BIAS[id] = -100;
}

/** vLLM's extra request and response fields, which the `openai` types do not name. */
type VllmChat = OpenAI.ChatCompletion & { prompt_token_ids: number[] | null; choices: Array<OpenAI.ChatCompletion.Choice & { token_ids: number[] | null }> };
type ChatParams = OpenAI.ChatCompletionCreateParamsNonStreaming & { return_token_ids?: boolean; echo?: boolean };

function client(episode?: string, agent?: string, baseURL = proxyBase): OpenAI {
  const headers: Record<string, string> = { ...(episode ? { 'x-episode-id': episode } : {}), ...(agent ? { 'x-agent-name': agent } : {}) };
  return new OpenAI({ apiKey: 'none', baseURL, maxRetries: 0, defaultHeaders: headers });
}

async function chat(c: OpenAI, params: ChatParams): Promise<VllmChat> {
  return (await c.chat.completions.create(params)) as VllmChat;
}

/** The ids and logprobs of a timeline's output, its input ids joined. */
function parts(t: Timeline) {
  const out = t.messages[t.messages.length - 1]!;
  return { prompt: t.messages.slice(0, -1).flatMap((m) => m.tokenIds), output: out.tokenIds, logprobs: out.logprobs, author: out.author };
}

/** A body without the fields that differ between any two responses. */
function comparable(body: unknown): unknown {
  return JSON.parse(JSON.stringify(body), (k, v: unknown) => (k === 'id' || k === 'created' ? '·' : v));
}

/**
 * A stream as a client reads it, without where vLLM cut it into chunks (that depends on timing: under
 * load its engine runs ahead and one chunk carries several tokens): per choice the content and
 * logprobs joined and the finish reason; the usage; and the set of fields the chunks carry.
 */
function streamed(chunks: unknown[]): unknown {
  const byChoice = new Map<number, { content: string; logprobs: unknown[]; finish: unknown }>();
  const fields = new Set<string>();
  let usage: unknown;
  for (const chunk of chunks as Array<Record<string, unknown> & { choices: Array<Record<string, unknown> & { index: number; delta: { content?: string }; logprobs?: { content?: unknown[] } | null; finish_reason: unknown }> }>) {
    for (const k of Object.keys(chunk)) fields.add(k);
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      for (const k of Object.keys(c)) fields.add(`choices.${k}`);
      const mine = byChoice.get(c.index) ?? { content: '', logprobs: [], finish: null };
      mine.content += c.delta.content ?? '';
      mine.logprobs.push(...(c.logprobs?.content ?? []));
      if (c.finish_reason !== null) mine.finish = c.finish_reason;
      byChoice.set(c.index, mine);
    }
  }
  return comparable({ choices: [...byChoice.entries()].sort((a, b) => a[0] - b[0]), usage, fields: [...fields].sort() });
}

beforeAll(async () => {
  const model = writeHfDir(path.join(work, 'model'), { config: cfg, weights: sharpWeights(cfg, 5, 4), tokenizer: tok });
  vllm = await startVllm({ model, port: await freePort(), servedModelName: MODEL, logFile: path.join(work, 'vllm.log') });
  direct = client(undefined, undefined, `${vllm.baseUrl}/v1`);
  store = tempStore('upstream-vllm');
  proxy = createRecordingProxy({ upstream: `${vllm.baseUrl}/v1`, recorder: blobStoreRecorder(store), log: (l) => notices.push(l) });
  await proxy.listen({ port: 0, host: '127.0.0.1' });
  proxyBase = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}/v1`;
}, 300_000);

afterAll(async () => {
  await proxy?.close();
  await vllm?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

test('a multi-turn agent is recorded with the ids and logprobs vLLM returned, split per message, and its episode merges into one sample', async () => {
  const users = ['Evaluate: 12+34\n', 'Compute: 7*6\n', 'ACT 1: 3*4\n'];
  // A conversation whose every turn the model ended itself (the end-of-turn id last), as the
  // template closes a turn it is sent back in: sampled seeds until one is (the first, on this build).
  let played: { episode: string; responses: VllmChat[]; messages: OpenAI.ChatCompletionMessageParam[] } | undefined;
  for (let attempt = 0; attempt < 8 && !played; attempt++) {
    const episode = `multi-turn-${attempt}`;
    const agent = client(episode, 'solver');
    const messages: OpenAI.ChatCompletionMessageParam[] = [];
    const responses: VllmChat[] = [];
    for (const [k, user] of users.entries()) {
      messages.push({ role: 'user', content: user });
      // The client asks for vLLM's ids and logprobs itself: what it reads is what vLLM returned.
      const r = await chat(agent, { model: MODEL, messages, max_tokens: 40, temperature: 1, seed: 10 + 10 * attempt + k, logit_bias: LOGIT_BIAS, logprobs: true, return_token_ids: true });
      responses.push(r);
      messages.push({ role: 'assistant', content: r.choices[0]!.message.content });
    }
    if (responses.every((r) => r.choices[0]!.token_ids!.at(-1) === tok.eosId && r.choices[0]!.token_ids!.length > 1)) played = { episode, responses, messages };
  }
  expect(played).toBeDefined();
  const { episode, responses, messages } = played!;

  const timelines = await readEpisodeTimelines(store, episode);
  expect(timelines).toHaveLength(3);
  for (const [k, t] of timelines.entries()) {
    const r = responses[k]!;
    const choice = r.choices[0]!;
    const p = parts(t);
    expect(t.agent).toBe('solver');
    expect(p.author).toBe('llm');
    expect(p.prompt).toEqual(r.prompt_token_ids);
    expect(p.output).toEqual(choice.token_ids);
    expect(p.logprobs).toEqual(choice.logprobs!.content!.map((e) => e.logprob));
    // One message per chat message, each the template's rendering of it: users verbatim, an
    // assistant turn as written and closed by the end-of-turn token.
    const sent = messages.slice(0, 2 * k + 1);
    expect(t.messages.slice(0, -1).map((m) => m.text)).toEqual(sent.map((m) => (m.role === 'assistant' ? `${m.content as string}${tok.eosToken}` : (m.content as string))));
    for (const [i, m] of t.messages.slice(0, -1).entries()) if (sent[i]!.role === 'user') expect(m.tokenIds).toEqual(tok.encode(sent[i]!.content as string));
    expect(t.messages.at(-1)!.text).toBe(`${choice.message.content}${tok.eosToken}`);
  }

  // Each call extends the one before: one sample, the model's three turns trained on (with vLLM's
  // ids, whatever the template's re-encoding of them) and the users' turns between them not.
  const merged = mergeAgentTimelines(timelines, TimelineSchema.parse({}));
  expect(merged.counts).toMatchObject({ captured: 3, merged: 1 });
  const sample = merged.samples[0]!.sample;
  expect(sample.promptTokens).toEqual(responses[0]!.prompt_token_ids);
  const env = (k: number) => timelines[2]!.messages[k]!.tokenIds;
  const outs = responses.map((r) => r.choices[0]!.token_ids!);
  const lps = responses.map((r) => r.choices[0]!.logprobs!.content!.map((e) => e.logprob));
  expect(sample.responseTokens).toEqual([...outs[0]!, ...env(2), ...outs[1]!, ...env(4), ...outs[2]!]);
  const zeros = (k: number) => env(k).map(() => 0);
  expect(sample.lossMask).toEqual([...outs[0]!.map(() => 1), ...zeros(2), ...outs[1]!.map(() => 1), ...zeros(4), ...outs[2]!.map(() => 1)]);
  expect(sample.logprobs).toEqual([...lps[0]!, ...zeros(2), ...lps[1]!, ...zeros(4), ...lps[2]!]);
}, 120_000);

test('the client reads the response vLLM gives it without the proxy; the recording has what the proxy asked for', async () => {
  const params: ChatParams = { model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 12+34\n' }], max_tokens: 12, temperature: 0, logit_bias: LOGIT_BIAS };
  const proxied = await chat(client('plain'), params);
  const plain = await chat(direct, params);
  // vLLM's own nulls where nothing was asked for: no ids, no logprobs.
  expect(proxied.prompt_token_ids).toBeNull();
  expect(proxied.choices[0]!.token_ids).toBeNull();
  expect(proxied.choices[0]!.logprobs).toBeNull();
  expect(comparable(proxied)).toEqual(comparable(plain));
  // Logprobs asked for and ids not: the logprobs stay, the ids go.
  const withLogprobs = await chat(client('plain'), { ...params, logprobs: true, top_logprobs: 2 });
  expect(comparable(withLogprobs)).toEqual(comparable(await chat(direct, { ...params, logprobs: true, top_logprobs: 2 })));
  expect(withLogprobs.choices[0]!.token_ids).toBeNull();

  // The recording: vLLM's ids for the same greedy request, and its logprobs.
  const full = await chat(direct, { ...params, logprobs: true, return_token_ids: true });
  const [first, second] = await readEpisodeTimelines(store, 'plain');
  for (const t of [first!, second!]) {
    const p = parts(t);
    expect(p.prompt).toEqual(full.prompt_token_ids);
    expect(p.output).toEqual(full.choices[0]!.token_ids);
    expect(p.logprobs).toHaveLength(p.output.length);
    p.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(full.choices[0]!.logprobs!.content![i]!.logprob, 4));
  }
  expect(parts(second!).logprobs).toEqual(withLogprobs.choices[0]!.logprobs!.content!.map((e) => e.logprob));
  // Without an episode nothing is recorded, and the request goes as it came.
  const unrecorded = await chat(client(), params);
  expect(comparable(unrecorded)).toEqual(comparable(plain));
  expect(await readEpisodeTimelines(store, 'plain')).toHaveLength(2);
});

test('a streamed chat is forwarded chunk by chunk as vLLM streams it, and recorded when it ends', async () => {
  const params = { model: MODEL, messages: [{ role: 'user' as const, content: 'Compute: 17+25\n' }], max_tokens: 10, temperature: 0, logit_bias: LOGIT_BIAS, stream: true as const, stream_options: { include_usage: true } };
  const chunks = async (c: OpenAI, p: typeof params & { logprobs?: boolean }) => {
    const out: unknown[] = [];
    for await (const chunk of await c.chat.completions.create(p)) out.push(chunk);
    return out;
  };
  const proxied = await chunks(client('streamed', 'streamer'), params);
  const plain = await chunks(direct, params);
  expect(proxied.length).toBeGreaterThan(3);
  expect(streamed(proxied)).toEqual(streamed(plain));
  // The client asking for logprobs reads vLLM's as they stream; the recording holds the same.
  const withLogprobs = (await chunks(client('streamed', 'streamer'), { ...params, logprobs: true })) as OpenAI.ChatCompletionChunk[];
  expect(streamed(withLogprobs)).toEqual(streamed(await chunks(direct, { ...params, logprobs: true })));

  const { stream: _s, stream_options: _o, ...once } = params;
  const full = await chat(direct, { ...once, logprobs: true, return_token_ids: true });
  const timelines = await readEpisodeTimelines(store, 'streamed');
  expect(timelines).toHaveLength(2);
  for (const t of timelines) {
    expect(t.agent).toBe('streamer');
    expect(parts(t).prompt).toEqual(full.prompt_token_ids);
    expect(parts(t).output).toEqual(full.choices[0]!.token_ids);
  }
  expect(parts(timelines[1]!).logprobs).toEqual(withLogprobs.flatMap((c) => c.choices.flatMap((ch) => ch.logprobs?.content?.map((e) => e.logprob) ?? [])));
});

test('completions, plain and streamed, with several prompts and n: one timeline per choice with its own prompt', async () => {
  const params = { model: MODEL, prompt: ['Evaluate: 1+2\n', 'Compute: 3*4\n'], max_tokens: 6, temperature: 1, seed: 3, n: 2, logit_bias: LOGIT_BIAS };
  const proxied = await client('completions').completions.create(params);
  expect(comparable(proxied)).toEqual(comparable(await direct.completions.create(params)));
  expect(proxied.choices.every((c) => c.logprobs === null)).toBe(true);
  const full = (await direct.completions.create({ ...params, logprobs: 0, return_token_ids: true } as OpenAI.CompletionCreateParamsNonStreaming)) as OpenAI.Completion & {
    choices: Array<OpenAI.CompletionChoice & { prompt_token_ids: number[]; token_ids: number[] }>;
  };
  const streamed: OpenAI.Completion[] = [];
  for await (const chunk of await client('completions').completions.create({ ...params, stream: true })) streamed.push(chunk);
  expect(streamed.flatMap((c) => c.choices.map((ch) => ch.logprobs))).toEqual(streamed.flatMap((c) => c.choices.map(() => null)));

  const timelines = await readEpisodeTimelines(store, 'completions');
  expect(timelines).toHaveLength(8);
  for (const batch of [timelines.slice(0, 4), timelines.slice(4)]) {
    batch.forEach((t, k) => {
      const c = full.choices[k]!;
      expect(t.messages).toHaveLength(2);
      expect(t.messages[0]!.text).toBe(params.prompt[Math.floor(k / 2)]);
      expect(parts(t).prompt).toEqual(c.prompt_token_ids);
      expect(parts(t).output).toEqual(c.token_ids);
      parts(t).logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(c.logprobs!.token_logprobs![i]!, 4));
    });
  }
});

test('tool calls and results in the history are split as the template renders them', async () => {
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'user', content: 'Evaluate: 12+34\n' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'calc', arguments: '{"expression":"12+34"}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '46' },
  ];
  const r = await chat(client('history'), { model: MODEL, messages, max_tokens: 6, temperature: 0, logit_bias: LOGIT_BIAS });
  expect(r.choices[0]!.message.content).toEqual(expect.any(String));
  const [t] = await readEpisodeTimelines(store, 'history');
  expect(t!.messages.map((m) => [m.author, m.text])).toEqual([
    ['env', 'Evaluate: 12+34\n'],
    ['env', '<calc>12+34</calc>'],
    ['env', '\n<result>46</result>\n'],
    ['llm', expect.any(String)],
  ]);
  expect(t!.messages[1]!.tokenIds).toEqual(tok.encode('<calc>12+34</calc>'));
});

test("vLLM's errors come back with its status and body, nothing is recorded, and a bad request fails no other", async () => {
  const status = async (c: OpenAI, params: ChatParams) => c.chat.completions.create(params).then(() => 200, (e: unknown) => (e instanceof OpenAI.APIError ? { status: e.status, error: e.error } : e));
  const cases: ChatParams[] = [
    { model: 'nope', messages: [{ role: 'user', content: 'x' }], max_tokens: 4 },
    { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 1000 },
    { model: MODEL, messages: [{ role: 'user', content: 'Compute: 1+2+3 '.repeat(30) }], max_tokens: 4 },
  ];
  for (const [k, params] of cases.entries()) {
    const theirs = await status(direct, params);
    expect(theirs).toMatchObject({ status: [404, 400, 400][k] });
    expect(await status(client(`errors-${k}`), params)).toEqual(theirs);
  }
  // The agent offers vLLM a tool: this server has no tool parser (none reads the Plan/Act syntax).
  await expect(solveArithmetic(client('errors-tools'), '12+34', { model: MODEL, episodeId: 'errors-tools' })).rejects.toMatchObject({
    status: 400,
    message: expect.stringMatching(/"auto" tool choice requires --enable-auto-tool-choice/),
  });
  for (const e of ['errors-0', 'errors-1', 'errors-2', 'errors-tools']) expect(await readEpisodeTimelines(store, e)).toEqual([]);

  // Good and bad requests at once, each its own episode: the good ones are answered and recorded.
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, k) =>
      status(client(`mixed-${k}`), { model: k % 2 ? 'nope' : MODEL, messages: [{ role: 'user', content: `Evaluate: ${k}+1\n` }], max_tokens: 4, temperature: 0, logit_bias: LOGIT_BIAS }),
    ),
  );
  expect(results).toEqual(Array.from({ length: 8 }, (_, k) => (k % 2 ? expect.objectContaining({ status: 404 }) : 200)));
  for (let k = 0; k < 8; k++) expect(await readEpisodeTimelines(store, `mixed-${k}`)).toHaveLength(k % 2 ? 0 : 1);

  // What the proxy itself refuses on a recorded request, by name, and a bad episode id.
  await expect(chat(client('echo'), { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 2, echo: true })).rejects.toMatchObject({ status: 400, param: 'echo' });
  await expect(chat(client('x'.repeat(201)), { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 2 })).rejects.toMatchObject({ status: 400, param: 'x-episode-id' });
});

test("empty chats and stop strings are vLLM's to answer: the proxy forwards its 400 for an empty prompt and its cut of a stop string split across byte tokens, plain and streamed alike", async () => {
  // The embedded gateway's cases of issue 36 (gateway-edges.test.ts): vLLM refuses an empty prompt
  // itself, and matches stop strings on whole characters; the proxy must change neither.
  const empty = { model: MODEL, messages: [{ role: 'system' as const, content: '' }, { role: 'user' as const, content: '' }], max_tokens: 2 };
  const refusal = async (c: OpenAI) => c.chat.completions.create(empty).then(() => 200, (e: unknown) => (e instanceof OpenAI.APIError ? { status: e.status, error: e.error } : e));
  const theirs = await refusal(direct);
  expect(theirs).toMatchObject({ status: 400, error: { message: expect.stringMatching(/prompt cannot be empty/) } });
  expect(await refusal(client())).toEqual(theirs);
  expect(await refusal(client('empty'))).toEqual(theirs);
  expect(await readEpisodeTimelines(store, 'empty')).toEqual([]);

  // A sampled response (no bias: byte tokens) whose stop string ends in a character its ids split.
  const ask = { model: MODEL, messages: [{ role: 'user' as const, content: 'Evaluate: 17+25\n' }], temperature: 1, max_tokens: 40 };
  let found: { seed: number; stop: string } | undefined;
  for (let seed = 0; seed < 20 && !found; seed++) {
    const ids = (await chat(direct, { ...ask, seed, return_token_ids: true })).choices[0]!.token_ids!;
    for (let k = 1; k < ids.length && !found; k++) {
      const before = tok.decode(ids.slice(0, k));
      const after = tok.decode(ids.slice(0, k + 1));
      const last = after.slice(before.length - 1, before.length);
      if (before.endsWith('\ufffd') && last !== '\ufffd' && last.charCodeAt(0) > 0x7f && before.length > 1) found = { seed, stop: `${before.at(-2)!}${last}` };
    }
  }
  expect(found).toBeDefined();
  const req = { ...ask, seed: found!.seed, stop: [found!.stop] };
  const plain = (await chat(direct, req)).choices[0]!;
  expect(plain.finish_reason).toBe('stop');
  const text = async (c: OpenAI) => {
    let out = '';
    for await (const chunk of await c.chat.completions.create({ ...req, stream: true })) out += chunk.choices[0]?.delta.content ?? '';
    return out;
  };
  expect((await chat(client('stop'), req)).choices[0]!.message.content).toBe(plain.message.content);
  expect(await text(client('stop'))).toBe(plain.message.content);
  expect(await text(client())).toBe(plain.message.content);
  expect(plain.message.content).not.toContain(found!.stop);
});

test('models and health are forwarded; an upstream that cannot be reached is a 502 in OpenAI shape', async () => {
  expect((await client().models.list()).data.map((m) => m.id)).toEqual([MODEL]);
  expect((await client().models.retrieve(MODEL)).id).toBe(MODEL);
  expect((await fetch(proxyBase.replace(/\/v1$/, '/health'))).status).toBe(200);

  const gone = createRecordingProxy({ upstream: `http://127.0.0.1:${await freePort()}/v1`, recorder: async () => undefined });
  await gone.listen({ port: 0, host: '127.0.0.1' });
  try {
    const base = `http://127.0.0.1:${(gone.server.address() as AddressInfo).port}/v1`;
    const err = await client('unreachable', undefined, base)
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 502, error: { type: 'server_error', code: 'upstream_unreachable', message: expect.stringMatching(/could not be reached/) } });
  } finally {
    await gone.close();
  }
  expect(notices).toEqual([]);
});
