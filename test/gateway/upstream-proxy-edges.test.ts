/**
 * The recording proxy's HTTP edge cases, the embedded gateway's of issue 36 (gateway-edges.test.ts)
 * reproduced against the proxy first: the documented 30 s request timeout fired late or never (Node
 * checks it every 30 s, and idle connections waited fastify's 72 s), and a body over the proxy's
 * 16 MiB limit was answered while it still arrived, so Node's fetch and the openai client got EPIPE
 * instead of the 413. Both servers now share src/gateway/http-server.ts. The proxy's upstream here
 * is a stand-in; against a real vLLM: upstream-vllm.test.ts.
 */
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import OpenAI from 'openai';
import { createRecordingProxy, PROXY_BODY_LIMIT } from '../../src/gateway/upstream-proxy';
import { chunkedChat, declared, oversizedFromAnotherProcess, slowClients } from '../helpers/http-edges';

type Json = Record<string, unknown>;
const TIMEOUT = 2_000;
const SLOW_MS = TIMEOUT * 1.5;
let upstream: FastifyInstance;
const proxies: FastifyInstance[] = [];
let releaseSlow: () => void = () => undefined;

const answer = (content: string): Json => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'm',
  choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
});

beforeAll(async () => {
  upstream = Fastify({ bodyLimit: 64 << 20 });
  upstream.get('/health', async (_req, reply) => reply.status(200).send());
  // A generation that takes longer than the proxy's request timeout when asked for 'slow'.
  upstream.post('/v1/chat/completions', async (req) => {
    const content = ((req.body as Json).messages as Array<{ content: string }>)[0]!.content;
    if (content === 'slow') {
      await new Promise<void>((r) => {
        const t = setTimeout(r, SLOW_MS);
        releaseSlow = () => (clearTimeout(t), r());
      });
    }
    return answer(`${content.length} characters`);
  });
  await upstream.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  releaseSlow();
  for (const p of proxies) await p.close();
  await upstream?.close();
});

async function serveProxy(requestTimeoutMs?: number) {
  const proxy = createRecordingProxy({
    upstream: `http://127.0.0.1:${(upstream.server.address() as AddressInfo).port}/v1`,
    recorder: async () => undefined,
    log: () => undefined,
    ...(requestTimeoutMs === undefined ? {} : { requestTimeoutMs }),
  });
  proxies.push(proxy);
  await proxy.listen({ port: 0, host: '127.0.0.1' });
  const port = (proxy.server.address() as AddressInfo).port;
  return { proxy, port, base: `http://127.0.0.1:${port}/v1` };
}

describe('the request timeout', () => {
  it('the default is the documented 30 s, for headers, the whole request and an idle connection', () => {
    const server = createRecordingProxy({ upstream: 'http://127.0.0.1:1/v1', recorder: async () => undefined }).server;
    expect([server.requestTimeout, server.headersTimeout, server.keepAliveTimeout]).toEqual([30_000, 30_000, 30_000]);
  });

  it('a stalled body, a body or headers dribbled, silence, and silence after a response each end when the timeout is up', async () => {
    const { port } = await serveProxy(TIMEOUT);
    const { stalled, slowBody, slowHeaders, silent, idle } = await slowClients(port);
    for (const r of [stalled, slowBody, slowHeaders]) expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(silent.answer).toMatch(/^$|^HTTP\/1\.1 408/);
    expect(idle.answer).toMatch(/^HTTP\/1\.1 200/);
    // Within the timeout, the check interval and Node's extra second for an idle keep-alive
    // connection (the proxy kept all five open past 10 s, before).
    for (const r of [stalled, slowBody, slowHeaders, silent, idle]) {
      expect(r.closedAfter).toBeGreaterThan(TIMEOUT - 100);
      expect(r.closedAfter).toBeLessThan(TIMEOUT + 1_500);
    }
  });

  it("an upstream generation longer than the timeout is still answered: the timeout is the client's to send its request", async () => {
    const { base } = await serveProxy(TIMEOUT);
    const t0 = performance.now();
    const r = await new OpenAI({ apiKey: 'none', baseURL: base, maxRetries: 0 }).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'slow' }] });
    expect(r.choices[0]!.message.content).toBe('4 characters');
    expect(performance.now() - t0).toBeGreaterThan(SLOW_MS - 100);
  });
});

describe('a body over the 16 MiB limit', () => {
  const MIB = PROXY_BODY_LIMIT >> 20;

  it("reaches Node's fetch and the official openai client as a 413, not a broken pipe (EPIPE) or a connection error", async () => {
    const { base } = await serveProxy();
    // Sizes whose upload outlasts the proxy's answer: the old proxy closed the socket under them.
    const answers = [...(await oversizedFromAnotherProcess(base, 'm', MIB + 1, 2)), ...(await oversizedFromAnotherProcess(base, 'm', 2 * MIB, 3))];
    expect(answers.filter((a) => a.status !== 413)).toEqual([]);
    expect(answers[0]!.message).toMatch(/16 MiB/);
  });

  it('a chunked body over the limit gets its 413 too, one under it is forwarded, and the proxy serves the next request', async () => {
    const { base } = await serveProxy();
    const post = (body: ReadableStream<Uint8Array> | string) => fetch(`${base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
    const over = await post(chunkedChat('m', PROXY_BODY_LIMIT));
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: Json }).error).toMatchObject({ type: 'invalid_request_error', code: 'request_too_large', message: expect.stringMatching(/16 MiB/) });
    const under = await post(chunkedChat('m', PROXY_BODY_LIMIT - 1_000));
    expect(under.status).toBe(200);
    expect(((await under.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content).toBe(`${PROXY_BODY_LIMIT - 1_000} characters`);
    expect((await post(JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }))).status).toBe(200);
  });

  it('a body declared larger than the proxy would read is refused at once and its connection closed', async () => {
    const { port } = await serveProxy();
    const r = await declared(port, 100 << 20);
    expect(r.answer).toMatch(/^HTTP\/1\.1 413[^]*connection: close[^]*16 MiB/i);
    expect(r.closedAfter).toBeLessThan(1_000);
  });
});
