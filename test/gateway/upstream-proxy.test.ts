/**
 * The recording proxy's handling of upstreams that misbehave in ways a real vLLM does not (the
 * proxy against a real vLLM: upstream-vllm.test.ts): a stand-in OpenAI server that answers without
 * ids or logprobs, streams without them, has no /tokenize or /detokenize, or holds text back in
 * empty chunks. Each such call is refused by name and nothing of it is recorded; others go on.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { createRecordingProxy } from '../../src/gateway/upstream-proxy';
import type { Timeline } from '../../src/timeline/types';

type Json = Record<string, unknown>;

/** How the stand-in answers; each test sets what it needs. */
let chatBody: (sent: Json) => Json;
let chunks: (sent: Json) => Json[];
let tokenizeOk = true;
let detokenizeOk = true;
const sent: Array<{ body: Json; auth: string | undefined }> = [];
const recorded: Array<[string, Timeline]> = [];
const notices: string[] = [];
let upstream: FastifyInstance;
let proxy: FastifyInstance;
let base: string;

const fullChat = (): Json => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, logprobs: { content: [{ token: 'h', logprob: -0.5 }, { token: 'i', logprob: -0.25 }] }, finish_reason: 'stop', token_ids: [7, 8] }],
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  prompt_token_ids: [1, 2, 3],
});

beforeAll(async () => {
  upstream = Fastify();
  upstream.post('/v1/chat/completions', async (req, reply) => {
    const body = req.body as Json;
    sent.push({ body, auth: req.headers.authorization });
    if (!body.stream) return chatBody(body);
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const c of chunks(body)) reply.raw.write(`data: ${JSON.stringify(c)}\n\n`);
    reply.raw.end('data: [DONE]\n\n');
    return reply;
  });
  upstream.post('/tokenize', async (req, reply) => {
    if (!tokenizeOk) return reply.status(404).send({ detail: 'Not Found' });
    // Message i is the one id i + 1; the generation prompt adds none.
    return { tokens: ((req.body as Json).messages as unknown[]).map((_, i) => i + 1) };
  });
  upstream.post('/detokenize', async (req, reply) => {
    if (!detokenizeOk) return reply.status(404).send({ detail: 'Not Found' });
    return { prompt: ((req.body as Json).tokens as number[]).map((t) => `<${t}>`).join('') };
  });
  await upstream.listen({ port: 0, host: '127.0.0.1' });
  proxy = createRecordingProxy({
    upstream: `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1/`,
    recorder: async (e, t) => void recorded.push([e, t]),
    log: (l) => notices.push(l),
  });
  await proxy.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

beforeEach(() => {
  chatBody = fullChat;
  chunks = () => [];
  tokenizeOk = detokenizeOk = true;
  sent.length = recorded.length = notices.length = 0;
});

const client = (episode?: string) => new OpenAI({ apiKey: 'sk-upstream', baseURL: base, maxRetries: 0, ...(episode ? { defaultHeaders: { 'x-episode-id': episode } } : {}) });
const ask = (episode?: string, messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'x' }]) => client(episode).chat.completions.create({ model: 'm', messages });

test('a recorded request asks for ids and logprobs and is answered without them; an unrecorded one goes as it came', async () => {
  const r = (await ask('e', [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }])) as unknown as Json;
  expect(sent[0]).toEqual({ body: expect.objectContaining({ return_token_ids: true, logprobs: true }), auth: 'Bearer sk-upstream' });
  expect(r).toMatchObject({ prompt_token_ids: null, choices: [{ token_ids: null, logprobs: null }] });
  expect(recorded).toHaveLength(1);
  // The stand-in's template gives each message one id: the three of them are three messages.
  expect(recorded[0]![1].messages).toEqual([
    { author: 'env', text: '<1>', tokenIds: [1], logprobs: [0] },
    { author: 'env', text: '<2>', tokenIds: [2], logprobs: [0] },
    { author: 'env', text: '<3>', tokenIds: [3], logprobs: [0] },
    { author: 'llm', text: '<7><8>', tokenIds: [7, 8], logprobs: [-0.5, -0.25] },
  ]);
  await ask();
  expect(sent[1]!.body).toEqual({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
  expect(recorded).toHaveLength(1);
});

const choice0 = (b: Json, over: Json): Json => ({ ...b, choices: [{ ...(b.choices as Json[])[0], ...over }] });

test.each([
  ['prompt_token_ids', (b: Json) => ({ ...b, prompt_token_ids: null })],
  ['choices[0].token_ids', (b: Json) => choice0(b, { token_ids: null })],
  ['choices[0].logprobs', (b: Json) => choice0(b, { logprobs: null })],
  ['logprob for every token id in choices[0]', (b: Json) => choice0(b, { token_ids: [7] })],
])('a response without %s is a 502 naming it, and nothing is recorded', async (what, broken) => {
  chatBody = () => broken(fullChat());
  const error = await ask('e').catch((e: unknown) => e);
  expect(error).toMatchObject({ status: 502, error: { code: 'upstream_missing_tokens' } });
  expect((error as Error).message).toContain(`has no ${what}`);
  expect(recorded).toEqual([]);
  // The same answer to a request that is not recorded is the client's to read.
  await expect(ask()).resolves.toBeDefined();
});

test('a stream without ids ends in an error event instead of [DONE], and nothing is recorded', async () => {
  chunks = () => [
    { id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }], prompt_token_ids: [1] },
    { id: 'c', choices: [{ index: 0, delta: { content: 'hi' }, logprobs: { content: [{ logprob: -1 }] }, token_ids: null }] },
  ];
  const stream = await client('e').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true });
  await expect(
    (async () => {
      for await (const _ of stream) void _;
    })(),
  ).rejects.toThrow(/no choices\[0\]\.token_ids in a streamed chunk/);
  expect(recorded).toEqual([]);
});

test('chunks that carry only what the proxy asked for are not forwarded; the stream is recorded whole', async () => {
  chunks = () => [
    { id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], prompt_token_ids: [1, 2] },
    { id: 'c', choices: [{ index: 0, delta: {}, logprobs: { content: [{ logprob: -1 }] }, finish_reason: null, token_ids: [5] }] },
    { id: 'c', choices: [{ index: 0, delta: { content: 'ok' }, logprobs: { content: [{ logprob: -2 }] }, finish_reason: 'stop', token_ids: [6] }] },
  ];
  const got: unknown[] = [];
  for await (const c of await client('e').chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true })) got.push(c);
  expect(got).toEqual([
    { id: 'c', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }], prompt_token_ids: null },
    { id: 'c', choices: [{ index: 0, delta: { content: 'ok' }, logprobs: null, finish_reason: 'stop', token_ids: null }] },
  ]);
  expect(recorded[0]![1].messages.at(-1)).toEqual({ author: 'llm', text: '<5><6>', tokenIds: [5, 6], logprobs: [-1, -2] });
});

test('an upstream without /tokenize records one prompt message (said once); without /detokenize nothing, by name', async () => {
  tokenizeOk = false;
  // Messages no earlier test sent (the proxy caches what /tokenize said).
  const two: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'p' }, { role: 'user', content: 'q' }];
  await ask('e', two);
  await ask('e', two);
  expect(recorded.map(([, t]) => t.messages.length)).toEqual([2, 2]);
  expect(notices).toEqual([expect.stringMatching(/gave no message boundaries inside a 2-message prompt/)]);
  detokenizeOk = false;
  chatBody = () => ({ ...fullChat(), prompt_token_ids: [40, 41] }); // ids the proxy has not decoded before
  await expect(ask('e', [{ role: 'user', content: 'r' }])).rejects.toMatchObject({ status: 502, error: { code: 'upstream_detokenize_failed', message: expect.stringMatching(/\/detokenize answered 404/) } });
  expect(recorded).toHaveLength(2);
});

test('a recorder that fails fails its own request only', async () => {
  const failing = createRecordingProxy({
    upstream: `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1`,
    recorder: async (episode) => {
      if (episode === 'bad') throw new Error('disk full');
    },
  });
  await failing.listen({ port: 0, host: '127.0.0.1' });
  try {
    const url = `http://127.0.0.1:${(failing.server.address() as AddressInfo).port}/v1`;
    const call = (episode: string) => new OpenAI({ apiKey: 'x', baseURL: url, maxRetries: 0, defaultHeaders: { 'x-episode-id': episode } }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const [bad, good] = await Promise.allSettled([call('bad'), call('good')]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { status: 500, error: { code: 'recording_failed', message: expect.stringMatching(/disk full/) } } });
    expect(good).toMatchObject({ status: 'fulfilled' });
  } finally {
    await failing.close();
  }
});
