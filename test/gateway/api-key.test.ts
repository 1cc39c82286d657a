/**
 * Who may write training data: the gateway and the recording proxy with an API key, through the
 * official `openai` client over real HTTP. A request without the key or with a wrong one is a 401 the
 * client reads as an AuthenticationError; it reaches no engine, no upstream, and records nothing in
 * the blob store. The right key is served and recorded; /health stays open, as on vLLM. The proxy
 * never sends its own key upstream.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import type { Completion } from '../../src/domain/types';
import { ApiKeyError, checkOpenBind, isLoopback, resolveApiKey } from '../../src/gateway/api-key';
import { blobStoreRecorder, readEpisodeTimelines } from '../../src/gateway/recorder';
import { createRecordingProxy } from '../../src/gateway/upstream-proxy';
import { loadTokenizer } from '../../src/model/tokenizer';
import { listenGateway } from '../helpers/gateway';
import { tempStore } from '../helpers/store';

const KEY = 'sk-gateway-test';
const UPSTREAM_KEY = 'sk-upstream-only';
const tokenizer = loadTokenizer();
const store = tempStore('api-key');
const served: string[] = [];

async function engine(prompt: string): Promise<Completion> {
  served.push(prompt);
  const tokenIds = [...tokenizer.encode('5'), tokenizer.eosId];
  return { text: '5', promptTokenIds: tokenizer.encode(prompt), tokenIds, logprobs: tokenIds.map(() => -0.1), entropy: tokenIds.map(() => 0), finishReason: 'eos' };
}

/** What the stand-in upstream was sent: each path with the Authorization it came with. */
const upstreamSaw: Array<{ path: string; auth: string | undefined }> = [];
let upstream: FastifyInstance;
const apps: FastifyInstance[] = [];
let gatewayBase: string;

/** A stand-in vLLM: a chat and a completion with ids and logprobs, and /tokenize and /detokenize. */
async function startUpstream(): Promise<string> {
  upstream = Fastify();
  upstream.addHook('onRequest', async (req) => void upstreamSaw.push({ path: req.url, auth: req.headers.authorization }));
  const lp = { content: [{ token: '5', logprob: -0.5 }] };
  upstream.post('/v1/chat/completions', async () => ({ id: 'c1', object: 'chat.completion', created: 1, model: 'm', choices: [{ index: 0, message: { role: 'assistant', content: '5' }, logprobs: lp, finish_reason: 'stop', token_ids: [9] }], prompt_token_ids: [1, 2] }));
  upstream.post('/v1/completions', async () => ({ id: 'p1', object: 'text_completion', created: 1, model: 'm', choices: [{ index: 0, text: '5', logprobs: { tokens: ['5'], token_logprobs: [-0.5], top_logprobs: null, text_offset: [0] }, finish_reason: 'stop', token_ids: [9], prompt_token_ids: [1, 2] }] }));
  upstream.get('/health', async () => ({}));
  upstream.post('/tokenize', async (req) => ({ tokens: ((req.body as { messages?: unknown[] }).messages ?? []).map((_, i) => i + 1) }));
  upstream.post('/detokenize', async (req) => ({ prompt: ((req.body as { tokens: number[] }).tokens).map((t) => `<${t}>`).join('') }));
  await upstream.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1`;
}

async function proxyBase(opts: { apiKey?: string; upstreamApiKey?: string }): Promise<string> {
  const proxy = createRecordingProxy({ upstream: `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1`, recorder: blobStoreRecorder(store), log: () => undefined, ...opts });
  apps.push(proxy);
  await proxy.listen({ port: 0, host: '127.0.0.1' });
  return `http://127.0.0.1:${(proxy.server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  const gw = await listenGateway({ engine: { complete: engine }, tokenizer, model: 'policy', maxSeq: 64, recorder: blobStoreRecorder(store), apiKey: KEY });
  apps.push(gw.app);
  gatewayBase = gw.base.replace(/\/v1$/, '');
  await startUpstream();
});

afterAll(async () => {
  for (const a of apps) await a.close();
  await upstream?.close();
});

beforeEach(() => {
  served.length = 0;
  upstreamSaw.length = 0;
});

const client = (base: string, apiKey: string, episode: string) => new OpenAI({ apiKey, baseURL: `${base}/v1`, maxRetries: 0, defaultHeaders: { 'x-episode-id': episode } });
const chat = (c: OpenAI, model: string) => c.chat.completions.create({ model, messages: [{ role: 'user', content: 'Evaluate: 2+3\n' }], max_tokens: 4 });
const complete = (c: OpenAI, model: string) => c.completions.create({ model, prompt: 'Evaluate: 2+3\n', max_tokens: 4 });
const chatStream = async (c: OpenAI, model: string) => {
  for await (const chunk of await c.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }], max_tokens: 4, stream: true })) void chunk;
};

/** Every call refused as OpenAI refuses a bad key; nothing served or forwarded, nothing recorded. */
async function expectRefused(base: string, model: string, apiKey: string | null): Promise<void> {
  const episode = `refused-${Math.random().toString(36).slice(2)}`;
  // The official client always sends its key; "no key" is a request without the header at all.
  const c = apiKey === null ? new OpenAI({ apiKey: 'unused', baseURL: `${base}/v1`, maxRetries: 0, defaultHeaders: { 'x-episode-id': episode, authorization: null } }) : client(base, apiKey, episode);
  for (const call of [chat, complete, chatStream]) {
    const err: unknown = await call(c, model).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).status).toBe(401);
    expect((err as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  }
  expect(served).toEqual([]);
  expect(upstreamSaw).toEqual([]);
  expect(await readEpisodeTimelines(store, episode)).toEqual([]);
}

describe('the gateway with --api-key', () => {
  test('refuses chat and completions without the key or with a wrong one: a 401, nothing generated or recorded', async () => {
    await expectRefused(gatewayBase, 'policy', null);
    await expectRefused(gatewayBase, 'policy', 'sk-wrong');
    await expectRefused(gatewayBase, 'policy', `${KEY}x`);
    // A raw request says what to send, with the challenge RFC 6750 asks for.
    const raw = await fetch(`${gatewayBase}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Basic ${KEY}` }, body: '{}' });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await raw.json()) as { error: { message: string } }).error.message).toMatch(/Authorization: Bearer <key>/);
  });

  test('serves and records with the right key; /health is open, every other route (models, unknown, escaped paths) needs the key', async () => {
    const c = client(gatewayBase, KEY, 'keyed-gateway');
    expect((await chat(c, 'policy')).choices[0]!.message.content).toBe('5');
    expect((await complete(c, 'policy')).choices[0]!.text).toBe('5');
    expect(await readEpisodeTimelines(store, 'keyed-gateway')).toHaveLength(2);
    expect((await fetch(`${gatewayBase}/health`)).status).toBe(200);
    expect((await fetch(`${gatewayBase}/v1/models`)).status).toBe(401);
    expect((await fetch(`${gatewayBase}/v1/models`, { headers: { authorization: `bearer ${KEY}` } })).status).toBe(200);
    expect((await fetch(`${gatewayBase}/nowhere`)).status).toBe(401);
    // The router decodes %76 to 'v': the check follows the route matched, not the URL's text.
    expect((await fetch(`${gatewayBase}/%761/models`)).status).not.toBe(200);
  });
});

describe('the recording proxy with --api-key', () => {
  test('refuses without the key or with a wrong one: a 401, nothing forwarded upstream, nothing recorded', async () => {
    const base = await proxyBase({ apiKey: KEY, upstreamApiKey: UPSTREAM_KEY });
    await expectRefused(base, 'm', null);
    await expectRefused(base, 'm', 'sk-wrong');
    // The client's key for the upstream is not this proxy's key either.
    await expectRefused(base, 'm', UPSTREAM_KEY);
  });

  test("with the right key forwards and records, sending the upstream its own key and never the proxy's", async () => {
    const base = await proxyBase({ apiKey: KEY, upstreamApiKey: UPSTREAM_KEY });
    const c = client(base, KEY, 'keyed-proxy');
    expect((await chat(c, 'm')).choices[0]!.message.content).toBe('5');
    expect((await complete(c, 'm')).choices[0]!.text).toBe('5');
    expect(await readEpisodeTimelines(store, 'keyed-proxy')).toHaveLength(2);
    expect((await fetch(`${base}/health`)).status).toBe(200);
    // Chat, completion, /tokenize and /detokenize and /health all went with the upstream's key.
    expect(new Set(upstreamSaw.map((s) => s.path))).toEqual(new Set(['/v1/chat/completions', '/v1/completions', '/tokenize', '/detokenize', '/health']));
    expect(new Set(upstreamSaw.map((s) => s.auth))).toEqual(new Set([`Bearer ${UPSTREAM_KEY}`]));
  });

  test('a keyed proxy without an upstream key sends the upstream no Authorization; a keyless one passes the client\'s on', async () => {
    const keyed = await proxyBase({ apiKey: KEY });
    await chat(client(keyed, KEY, 'keyed-proxy-no-upstream-key'), 'm');
    expect(upstreamSaw.length).toBeGreaterThan(0);
    expect(upstreamSaw.filter((s) => s.auth !== undefined)).toEqual([]);
    upstreamSaw.length = 0;
    const open = await proxyBase({});
    await chat(client(open, 'sk-for-the-upstream', 'open-proxy'), 'm');
    expect(new Set(upstreamSaw.map((s) => s.auth))).toEqual(new Set(['Bearer sk-for-the-upstream']));
  });
});

describe('keys refused at start', () => {
  test('an empty or unsendable key is an ApiKeyError naming the flag or variable it came from; the flag wins over the environment', () => {
    expect(() => resolveApiKey({ name: '--api-key', value: '' }, { name: 'VLLM_API_KEY', value: 'k' })).toThrow(new ApiKeyError("--api-key is empty; give a key, or leave --api-key out to run without one (loopback only)"));
    expect(() => resolveApiKey({ name: '--api-key', value: undefined }, { name: 'VLLM_API_KEY', value: '' })).toThrow(/^VLLM_API_KEY is empty/);
    expect(() => resolveApiKey({ name: '--api-key', value: ' k' }, { name: 'VLLM_API_KEY', value: undefined })).toThrow(ApiKeyError);
    expect(() => resolveApiKey({ name: '--api-key', value: 'k\n' }, { name: 'VLLM_API_KEY', value: undefined })).toThrow(/--api-key must be printable ASCII/);
    expect(resolveApiKey({ name: '--api-key', value: 'a b' }, { name: 'VLLM_API_KEY', value: 'env' })).toBe('a b');
    expect(resolveApiKey({ name: '--api-key', value: undefined }, { name: 'VLLM_API_KEY', value: 'env' })).toBe('env');
    expect(resolveApiKey({ name: '--api-key', value: undefined }, { name: 'VLLM_API_KEY', value: undefined })).toBeUndefined();
    expect(() => createRecordingProxy({ upstream: 'http://127.0.0.1:1/v1', recorder: async () => undefined, upstreamApiKey: '' })).toThrow(ApiKeyError);
  });

  test('a keyless server may bind loopback only', () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) expect(isLoopback(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '', '128.0.0.1', '::ffff:10.0.0.1']) expect(isLoopback(host)).toBe(false);
    expect(() => checkOpenBind('0.0.0.0', undefined)).toThrow(/--host 0\.0\.0\.0 lets other hosts reach this server.*--api-key or VLLM_API_KEY/);
    expect(() => checkOpenBind('0.0.0.0', KEY)).not.toThrow();
    expect(() => checkOpenBind('127.0.0.1', undefined)).not.toThrow();
  });
});
