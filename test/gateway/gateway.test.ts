/**
 * The gateway through the official `openai` client, on the embedded policy (ONNX engine, the shipped
 * tokenizer, small random weights): models, chat (plain, streamed, logprobs, n, seed), completions,
 * OpenAI-shaped errors, timelines recorded per episode, 64 concurrent clients. Tool-call translation
 * is checked against a scripted engine that writes a calculator call, as a trained actor does.
 */
import OpenAI from 'openai';
import type { Completion, SamplingParams } from '../../src/domain/types';
import { BatchingEngine } from '../../src/engine/batcher';
import { OrtEngine } from '../../src/engine/ort-engine';
import { blobStoreRecorder, readEpisodeTimelines } from '../../src/gateway/recorder';
import type { GatewayEngine } from '../../src/gateway/server';
import { listenGateway } from '../helpers/gateway';
import { initWeights } from '../../src/model/init';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { mergeTimelines } from '../../src/timeline/merge';
import type { Timeline } from '../../src/timeline/types';
import { tempStore } from '../helpers/store';
import { solveWithLangChain } from '../../scripts/langchain-agent';

const tokenizer = loadTokenizer();
const cfg = { vocabSize: tokenizer.vocabSize, maxSeq: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 };
const MODEL = 'durable-rl-embedded';
let ort: OrtEngine;
const recorded = new Map<string, Timeline[]>();

const serve = (engine: GatewayEngine) =>
  listenGateway({
    engine,
    tokenizer,
    model: MODEL,
    maxSeq: cfg.maxSeq,
    recorder: async (episode, t) => void recorded.set(episode, [...(recorded.get(episode) ?? []), t]),
  });

let embedded: Awaited<ReturnType<typeof serve>>;

beforeAll(async () => {
  ort = await OrtEngine.create({ onnx: exportOnnx(cfg, initWeights(cfg, 3)), config: cfg, tokenizer, weightVersion: 0, threads: 1 });
  const batcher = new BatchingEngine(ort, 64);
  embedded = await serve({ complete: (prompt, params) => batcher.complete(prompt, params) });
});

afterAll(async () => {
  await embedded?.app.close();
  await ort?.release();
});

test('lists its model and answers a chat request with usage and per-token logprobs, recorded under its episode', async () => {
  const client = embedded.client('ep-basic');
  expect((await client.models.list()).data.map((m) => m.id)).toEqual([MODEL]);
  const r = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 12+34\n' }], max_tokens: 8, temperature: 1, seed: 4, logprobs: true, n: 2 });
  expect(r.object).toBe('chat.completion');
  expect(r.choices).toHaveLength(2);
  for (const c of r.choices) {
    expect(c.message.role).toBe('assistant');
    expect(['stop', 'length']).toContain(c.finish_reason);
    expect(c.logprobs!.content!.every((t) => t.logprob <= 0 && t.token.length > 0)).toBe(true);
  }
  expect(r.usage!.prompt_tokens).toBe(tokenizer.encode('Evaluate: 12+34\n').length);
  expect(r.usage!.completion_tokens).toBe(r.choices.reduce((n, c) => n + c.logprobs!.content!.length, 0));
  // One timeline per choice, as the model saw it: the user message, then its own tokens and logprobs.
  const timelines = recorded.get('ep-basic')!;
  expect(timelines).toHaveLength(2);
  expect(timelines[0]!.messages[0]).toMatchObject({ author: 'env', text: 'Evaluate: 12+34\n' });
  expect(timelines[0]!.messages[1]!.logprobs).toEqual(r.choices[0]!.logprobs!.content!.map((t) => t.logprob));
  // The same seed gives the same answer; a request without an episode is served, not recorded.
  const again = await embedded.client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 12+34\n' }], max_tokens: 8, seed: 4 });
  expect(again.choices[0]!.message.content).toBe(r.choices[0]!.message.content);
  expect([...recorded.keys()]).toEqual(['ep-basic']);
});

test('returns the most likely alternatives per token with top_logprobs, the greedy choice first among them', async () => {
  const r = await embedded.client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 8+9\n' }], max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0]!.logprobs!.content!;
  expect(content.length).toBeGreaterThan(0);
  for (const t of content) {
    expect(t.top_logprobs).toHaveLength(3);
    const lps = t.top_logprobs.map((a) => a.logprob);
    expect(lps).toEqual([...lps].sort((a, b) => b - a));
    // Greedy: the token taken is the most likely one, with its logprob.
    expect(t.top_logprobs[0]!.token).toBe(t.token);
    expect(t.top_logprobs[0]!.logprob).toBeCloseTo(t.logprob, 6);
  }
  const bad = await embedded.client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], top_logprobs: 2 }).catch((e: unknown) => e);
  expect(bad).toMatchObject({ status: 400, param: 'top_logprobs' });
});

test('streams the same answer as server-sent chunks, ending with usage when asked', async () => {
  const client = embedded.client();
  const plain = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Compute: 5+6\n' }], max_tokens: 10, seed: 9 });
  const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Compute: 5+6\n' }], max_tokens: 10, seed: 9, stream: true, stream_options: { include_usage: true } });
  let content = '';
  let finish: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
    usage = chunk.usage ?? usage;
  }
  expect(content).toBe(plain.choices[0]!.message.content);
  expect(finish).toBe(plain.choices[0]!.finish_reason);
  expect(usage).toEqual(plain.usage);
});

test('serves /v1/completions', async () => {
  const r = await embedded.client().completions.create({ model: MODEL, prompt: ['Evaluate: 1+2\n', 'Evaluate: 3+4\n'], max_tokens: 5, seed: 1 });
  expect(r.object).toBe('text_completion');
  expect(r.choices).toHaveLength(2);
  expect(r.usage!.completion_tokens).toBeGreaterThan(0);
});

test('answers bad requests with OpenAI-shaped errors and the right status', async () => {
  const client = embedded.client();
  const fail = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as InstanceType<typeof OpenAI.APIError>);
  const unknown = await fail(client.chat.completions.create({ model: 'gpt-9', messages: [{ role: 'user', content: 'x' }] }));
  expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
  expect(unknown).toMatchObject({ status: 404, code: 'model_not_found', param: 'model' });
  const tooLong = await fail(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 4096 }));
  expect(tooLong).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'max_tokens' });
  const badTemp = await fail(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], temperature: 7 }));
  expect(badTemp).toMatchObject({ status: 400, param: 'temperature' });
  const otherTool = await fail(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'search' } }] }));
  expect(otherTool).toMatchObject({ status: 400, param: 'tools' });
  expect((otherTool as Error).message).toMatch(/only the 'calc' tool/);
  // Not JSON at all, and an argument OpenAI does not have.
  const raw = await fetch(`${embedded.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": ' });
  expect(raw.status).toBe(400);
  expect(await raw.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.any(String) } });
  const extra = await fail(client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], frequency_penalty: 0.5 }));
  // A knob the sampler does not have is refused at a value that would change sampling, naming it.
  expect(extra).toMatchObject({ status: 400, param: 'frequency_penalty' });
  expect((extra as Error).message).toMatch(/frequency_penalty is not supported by this engine/);
});

test('64 concurrent clients on their own episodes: every timeline lands in its own episode, and each chain merges', async () => {
  const episodes = Array.from({ length: 64 }, (_, i) => `ep-many-${i}`);
  await Promise.all(
    episodes.map(async (ep, i) => {
      const client = embedded.client(ep);
      const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: `Evaluate: ${i}+${i}\n` }];
      const first = await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, seed: i });
      messages.push({ role: 'assistant', content: first.choices[0]!.message.content }, { role: 'user', content: 'again\n' });
      await client.chat.completions.create({ model: MODEL, messages, max_tokens: 6, seed: i });
    }),
  );
  episodes.forEach((ep, i) => {
    const timelines = recorded.get(ep)!;
    expect(timelines).toHaveLength(2);
    expect(timelines.every((t) => t.messages[0]!.text === `Evaluate: ${i}+${i}\n`)).toBe(true);
    // The second request starts with all of the first: one sample, both model turns marked llm.
    const merged = mergeTimelines(timelines, { compareBy: 'text', ignoreTools: true, snapDetection: false });
    expect(merged.timelines).toHaveLength(1);
    expect(merged.timelines[0]!.messages.filter((m) => m.author === 'llm')).toHaveLength(2);
  });
});

describe('tool calls', () => {
  let scripted: Awaited<ReturnType<typeof serve>>;
  /** Writes a calculator call first, then copies the tool result, as a trained actor does. */
  const actor: GatewayEngine = {
    async complete(prompt: string, params: SamplingParams): Promise<Completion> {
      const result = /<result>(.*?)<\/result>\n$/.exec(prompt)?.[1];
      const text = result ?? '<calc>12+34</calc>';
      const tokenIds = [...tokenizer.encode(text), ...(result ? [tokenizer.eosId] : [])];
      expect(params.stop).toContain('</calc>');
      return { text, promptTokenIds: tokenizer.encode(prompt), tokenIds, logprobs: tokenIds.map(() => -0.1), entropy: tokenIds.map(() => 0), finishReason: result ? 'eos' : 'stop' };
    },
  };
  beforeAll(async () => {
    scripted = await serve(actor);
  });
  afterAll(async () => {
    await scripted?.app.close();
  });

  it('turns a calculator call into an OpenAI tool call and a tool message back into the protocol, recording one mergeable chain', async () => {
    const client = scripted.client('ep-tools');
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'calc', parameters: { type: 'object', properties: { expression: { type: 'string' } } } } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Evaluate: 12+34\n' }];
    const first = await client.chat.completions.create({ model: MODEL, messages, tools });
    const call = first.choices[0]!.message.tool_calls![0]!;
    expect(first.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call).toMatchObject({ type: 'function', function: { name: 'calc', arguments: '{"expression":"12+34"}' } });
    messages.push(first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: '46' });
    const second = await client.chat.completions.create({ model: MODEL, messages, tools });
    expect(second.choices[0]!.message.content).toBe('46');
    expect(second.choices[0]!.finish_reason).toBe('stop');
    const timelines = recorded.get('ep-tools')!;
    expect(timelines[1]!.messages.map((m) => m.text)).toEqual(['Evaluate: 12+34\n', '<calc>12+34</calc>', '\n<result>46</result>\n', '46<|eos|>']);
    const merged = mergeTimelines(timelines, { compareBy: 'token', ignoreTools: false, snapDetection: false });
    expect(merged.timelines).toHaveLength(1);
    expect(merged.timelines[0]!.messages.map((m) => m.author)).toEqual(['env', 'llm', 'env', 'llm']);
  });

  it('serves a LangChain agent (ChatOpenAI with a bound calc tool) the same way', async () => {
    const answer = await solveWithLangChain(scripted.base, MODEL, '12+34', 'ep-langchain');
    expect(answer).toBe('46');
    const timelines = recorded.get('ep-langchain')!;
    expect(timelines).toHaveLength(2);
    expect(timelines[1]!.messages.map((m) => m.text)).toEqual(['Evaluate: 12+34\n', '<calc>12+34</calc>', '\n<result>46</result>\n', '46<|eos|>']);
    expect(mergeTimelines(timelines, { compareBy: 'text', ignoreTools: true, snapDetection: false }).timelines).toHaveLength(1);
  });
});

test('the blob-store recorder keeps each episode\'s timelines apart and in the order they were served', async () => {
  const store = tempStore('gateway-recorder');
  const record = blobStoreRecorder(store);
  const t = (id: string): Timeline => ({ id, agent: 'agent', tools: '', messages: [{ author: 'llm', text: id, tokenIds: [1], logprobs: [-1] }] });
  await record('ep/a', t('a1'));
  await record('ep-b', t('b1'));
  await record('ep/a', t('a2'));
  expect((await readEpisodeTimelines(store, 'ep/a')).map((x) => x.id)).toEqual(['a1', 'a2']);
  expect((await readEpisodeTimelines(store, 'ep-b')).map((x) => x.id)).toEqual(['b1']);
  // A second gateway on the same store goes on numbering after what is there.
  await blobStoreRecorder(store)('ep/a', t('a3'));
  expect((await readEpisodeTimelines(store, 'ep/a')).map((x) => x.id)).toEqual(['a1', 'a2', 'a3']);
});

test('concurrent calls of one episode each keep their recording, numbered in the order they were served', async () => {
  const store = tempStore('gateway-recorder-concurrent');
  const record = blobStoreRecorder(store);
  const t = (id: string): Timeline => ({ id, agent: 'agent', tools: '', messages: [{ author: 'llm', text: id, tokenIds: [1], logprobs: [-1] }] });
  // Eight first calls of a new episode at once: each used to read "no timelines yet" and write 000000.
  const ids = Array.from({ length: 8 }, (_, i) => `c${i}`);
  await Promise.all(ids.map((id) => record('ep-concurrent', t(id))));
  expect((await readEpisodeTimelines(store, 'ep-concurrent')).map((x) => x.id)).toEqual(ids);
  // A later call goes after them; a second recorder on the same store after that.
  await record('ep-concurrent', t('c8'));
  await blobStoreRecorder(store)('ep-concurrent', t('c9'));
  expect((await readEpisodeTimelines(store, 'ep-concurrent')).map((x) => x.id)).toEqual([...ids, 'c8', 'c9']);
});

describe('stop strings', () => {
  let served: Awaited<ReturnType<typeof serve>>;
  /** Writes "The sum is 46. More text" and stops on the user's stop string inside its last token, as an engine of whole tokens does. */
  const writer: GatewayEngine = {
    async complete(prompt: string, params: SamplingParams): Promise<Completion> {
      const text = 'The sum is 46. More';
      const tokenIds = tokenizer.encode(text);
      const stopped = params.stop.some((s) => text.includes(s));
      return { text, promptTokenIds: tokenizer.encode(prompt), tokenIds, logprobs: tokenIds.map(() => -0.1), entropy: tokenIds.map(() => 0), finishReason: stopped ? 'stop' : 'length' };
    },
  };
  beforeAll(async () => {
    served = await serve(writer);
  });
  afterAll(async () => {
    await served?.app.close();
  });

  it('are cut from the output as OpenAI does, with nothing of the token after them; include_stop_str_in_output keeps the stop only', async () => {
    const post = async (body: object) => (await (await fetch(`${served.base}/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, prompt: 'Q', max_tokens: 8, ...body }) })).json()) as { choices: Array<{ text: string; stop_reason: string | null; finish_reason: string }> };
    const cut = await post({ stop: ['. M', 'is 4'] });
    expect(cut.choices[0]).toMatchObject({ text: 'The sum ', stop_reason: 'is 4', finish_reason: 'stop' });
    const kept = await post({ stop: ['46'], include_stop_str_in_output: true });
    expect(kept.choices[0]).toMatchObject({ text: 'The sum is 46', stop_reason: '46' });
    const client = served.client();
    const chat = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Q' }], stop: ['.'], max_tokens: 8 });
    expect(chat.choices[0]!.message.content).toBe('The sum is 46');
    expect(chat.choices[0]!.finish_reason).toBe('stop');
  });
});

describe('episode ids', () => {
  it('are refused before any generation when they cannot be an id, naming the header', async () => {
    let calls = 0;
    const counted = await serve({ complete: async (prompt, params) => (calls++, ort.generate([prompt], params).then((o) => o[0]!)) });
    try {
      for (const bad of ['x'.repeat(300), 'a\nb']) {
        const res = await fetch(`${counted.base}/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-episode-id': bad.replace('\n', '\t') },
          body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 2 }),
        });
        expect(res.status).toBe(400);
        const body = (await res.json()) as { error: { message: string; param: string } };
        expect(body.error).toMatchObject({ param: 'x-episode-id', message: expect.stringMatching(/^x-episode-id /) });
        expect(body.error.message).not.toMatch(/\/tmp|\/work|\.data/);
      }
      expect(calls).toBe(0);
    } finally {
      await counted.app.close();
    }
  });

  it('that differ stay apart in the store: col/1, col_1, col 1, non-ASCII ids of one length, and dots', async () => {
    const store = tempStore('gateway-episode-keys');
    const record = blobStoreRecorder(store);
    const t = (id: string): Timeline => ({ id, agent: 'agent', tools: '', messages: [{ author: 'llm', text: id, tokenIds: [1], logprobs: [-1] }] });
    const ids = ['col/1', 'col_1', 'col 1', 'épisode', 'éπisode', '.', '..'];
    for (const id of ids) await record(id, t(id));
    for (const id of ids) expect((await readEpisodeTimelines(store, id)).map((x) => x.id)).toEqual([id]);
  });
});

test('answers /health and GET /v1/models/{id}; a client text with a control token is refused, naming where', async () => {
  expect((await fetch(`${embedded.base.replace(/\/v1$/, '')}/health`)).status).toBe(200);
  const card = (await (await fetch(`${embedded.base}/models/${MODEL}`)).json()) as { id: string };
  expect(card.id).toBe(MODEL);
  expect((await fetch(`${embedded.base}/models/other`)).status).toBe(404);
  const res = await fetch(`${embedded.base}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'Evaluate: 1+2\n<|eos|>' }], max_tokens: 2 }),
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: 'messages.1', message: expect.stringContaining('<|eos|>') });
});

test('a request cannot carry more than 10,000 prompts or ask for more than 2^21 tokens, and an oversized text is refused before it is tokenized', async () => {
  const post = (body: object) => fetch(`${embedded.base}/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, max_tokens: 2, ...body }) });
  const many = await post({ prompt: Array.from({ length: 10_001 }, () => 'E\n') });
  expect(many.status).toBe(400);
  expect(((await many.json()) as { error: { message: string } }).error.message).toMatch(/at most 10000 prompts/);
  // 200,000 prompts used to overflow the stack (a spread over every prompt's length): now a 400.
  const huge = await post({ prompt: Array.from({ length: 200_000 }, () => '1') });
  expect(huge.status).toBe(400);
  const costly = await post({ prompt: Array.from({ length: 9_000 }, () => 'E\n'), n: 16, max_tokens: 100 });
  expect(costly.status).toBe(400);
  expect(((await costly.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: 'max_tokens', message: expect.stringMatching(/prompts × n × max_tokens is 14400000 tokens/) });
  const big = 'Evaluate: 1+2\n'.repeat(200_000); // 2.8 MB: the gateway's body limit is 4 MiB
  const res = await post({ prompt: big });
  expect(res.status).toBe(400);
  // Counted in characters, not tokens: the tokenizer never saw the 2.8 MB.
  expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'context_length_exceeded', message: expect.stringMatching(/characters, more than any 128 tokens can hold/) });
  const chat = await fetch(`${embedded.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: big }] }) });
  expect(chat.status).toBe(400);
});
