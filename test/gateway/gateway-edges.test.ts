/**
 * Gateway edge cases found from outside (issue 36), each reproduced first: a stop string ending in a
 * character split across byte tokens (leaked by streaming, or matched against the U+FFFD of half a
 * character), an empty message (a 500), the request timeout (408 after 89 s instead of 30 s), a body
 * over the limit (the client got EPIPE instead of the 413) and the "ignoring the request field '0'"
 * log for bodies already refused. The stop cases run on the policy `npm run gateway` serves without
 * --from-run (the default shape, initWeights seed 1), where they were found.
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { Completion, SamplingParams } from '../../src/domain/types';
import { BatchingEngine } from '../../src/engine/batcher';
import { OrtEngine } from '../../src/engine/ort-engine';
import type { GatewayEngine, GatewayOptions } from '../../src/gateway/server';
import { createGateway } from '../../src/gateway/server';
import { DEFAULT_GPT_CONFIG } from '../../src/model/default-config';
import { initWeights } from '../../src/model/init';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { listenGateway } from '../helpers/gateway';
import { chunkedChat, declared, oversizedFromAnotherProcess, slowClients } from '../helpers/http-edges';

const tokenizer = loadTokenizer();
const MODEL = 'durable-rl';
const logged: string[] = [];
let ort: OrtEngine;
let gw: Awaited<ReturnType<typeof listenGateway>>;

const serve = (engine: GatewayEngine, extra: Partial<GatewayOptions> = {}) =>
  listenGateway({ engine, tokenizer, model: MODEL, maxSeq: DEFAULT_GPT_CONFIG.maxSeq, log: (line) => logged.push(line), ...extra });
const postRaw = (base: string, path: string, body: string | ReadableStream<Uint8Array>, contentType = 'application/json') =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body, duplex: 'half' } as RequestInit);
type ErrorBody = { error: { message: string; type: string; param: string | null } };

beforeAll(async () => {
  const cfg = DEFAULT_GPT_CONFIG;
  ort = await OrtEngine.create({ onnx: exportOnnx(cfg, initWeights(cfg, 1)), config: cfg, tokenizer, weightVersion: 0, threads: 1 });
  const batcher = new BatchingEngine(ort, 64);
  gw = await serve({ complete: (p, params, o) => batcher.complete(p, params, o) });
});

afterAll(async () => {
  await gw?.app.close();
  await ort?.release();
});

describe('stop strings and characters split across byte tokens', () => {
  const ask = { model: MODEL, messages: [{ role: 'user' as const, content: 'Evaluate: 17+25\n' }], temperature: 1, max_tokens: 40 };
  const streamed = async (req: OpenAI.ChatCompletionCreateParamsNonStreaming) => {
    let text = '';
    let finish: string | null = null;
    for await (const chunk of await gw.client().chat.completions.create({ ...req, stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    return { text, finish };
  };

  it('a stream holds back a stop string until its last character is whole, so it sends what the plain response holds', async () => {
    const stop = '.\u0002\u033f'; // U+033F is two bytes, sampled as two byte tokens
    const free = await gw.client().chat.completions.create({ ...ask, seed: 12 });
    expect(free.choices[0]!.message.content).toContain(stop); // the case still arises on this policy
    const req = { ...ask, seed: 12, stop: [stop] };
    const plain = await gw.client().chat.completions.create(req);
    const want = free.choices[0]!.message.content!.slice(0, free.choices[0]!.message.content!.indexOf(stop));
    expect(plain.choices[0]).toMatchObject({ message: { content: want }, finish_reason: 'stop' });
    expect(await streamed(req)).toEqual({ text: want, finish: 'stop' });
  });

  it('a stop string is matched on whole characters only, never on the U+FFFD half a character shows', async () => {
    const stop = '\ufffd\ufffd';
    const free = (await gw.client().chat.completions.create({ ...ask, seed: 33 })).choices[0]!.message.content!;
    // The first U+FFFD the free text shows is one character (a whole invalid byte), not a pair.
    expect(free.indexOf(stop)).toBeGreaterThan(0);
    const want = free.slice(0, free.indexOf(stop));
    const req = { ...ask, seed: 33, stop: [stop] };
    const plain = await gw.client().chat.completions.create(req);
    expect(plain.choices[0]).toMatchObject({ message: { content: want }, finish_reason: 'stop' });
    expect(await streamed(req)).toEqual({ text: want, finish: 'stop' });
    const completion = (await (await postRaw(gw.base, '/completions', JSON.stringify({ model: MODEL, prompt: ask.messages[0]!.content, seed: 33, temperature: 1, max_tokens: 40, stop }))).json()) as { choices: Array<{ text: string; stop_reason: string }> };
    expect(completion.choices[0]).toMatchObject({ text: want, stop_reason: stop });
  });
});

describe('empty messages', () => {
  it('a chat whose messages render to no text is a 400 naming the message, as vLLM refuses an empty prompt', async () => {
    const cases: Array<[object[], string]> = [
      [[{ role: 'user', content: '' }], 'messages.0.content'],
      [[{ role: 'system', content: '' }, { role: 'user', content: '' }], 'messages.1.content'],
      [[{ role: 'user', content: [{ type: 'text', text: '' }] }], 'messages.0.content'],
    ];
    for (const [messages, param] of cases) {
      const res = await postRaw(gw.base, '/chat/completions', JSON.stringify({ model: MODEL, messages, max_tokens: 2 }));
      expect(res.status).toBe(400);
      expect(((await res.json()) as ErrorBody).error).toMatchObject({ type: 'invalid_request_error', param, message: expect.stringMatching(/empty/) });
    }
    // One empty message among others is served: the prompt still has tokens.
    const served = await postRaw(gw.base, '/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'system', content: '' }, { role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 2 }));
    expect(served.status).toBe(200);
  });
});

describe('the request timeout', () => {
  const TIMEOUT = 2_000;
  let short: Awaited<ReturnType<typeof serve>>;
  let port: number;
  let releaseSlow: () => void = () => undefined;
  beforeAll(async () => {
    // An engine that takes longer than the timeout: a long generation is not a slow client.
    const slow: GatewayEngine = {
      complete: async (prompt: string, _p: SamplingParams): Promise<Completion> => {
        await new Promise<void>((r) => {
          const t = setTimeout(r, TIMEOUT * 1.5);
          releaseSlow = () => (clearTimeout(t), r());
        });
        const ids = tokenizer.encode('42');
        return { text: '42', promptTokenIds: tokenizer.encode(prompt), tokenIds: ids, logprobs: ids.map(() => -1), entropy: ids.map(() => 0), finishReason: 'length' };
      },
    };
    short = await serve(slow, { requestTimeoutMs: TIMEOUT });
    port = (short.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    releaseSlow();
    await short?.app.close();
  });
  // The answer comes within the timeout, the server's check interval and Node's extra second for an
  // idle keep-alive connection; 89 s (stalled body), 57 s (slow headers) and more than 75 s (silence)
  // with a 30 s timeout, before.
  const within = (ms: number) => {
    expect(ms).toBeGreaterThan(TIMEOUT - 100);
    expect(ms).toBeLessThan(TIMEOUT + 1_500);
  };

  it('the default is the documented 30 s, for headers, the whole request and an idle connection', () => {
    const server = createGateway({ engine: { complete: () => Promise.reject(new Error('unused')) }, tokenizer, model: MODEL, maxSeq: 8 }).server;
    expect([server.requestTimeout, server.headersTimeout, server.keepAliveTimeout]).toEqual([30_000, 30_000, 30_000]);
  });

  it('a stalled body, a body or headers dribbled a byte at a time, silence, and silence after a response each end when the timeout is up', async () => {
    const { stalled, slowBody, slowHeaders, silent, idle } = await slowClients(port);
    for (const r of [stalled, slowBody, slowHeaders]) expect(r.answer).toMatch(/^HTTP\/1\.1 408/);
    expect(silent.answer).toMatch(/^$|^HTTP\/1\.1 408/);
    expect(idle.answer).toMatch(/^HTTP\/1\.1 200/);
    for (const r of [stalled, slowBody, slowHeaders, silent, idle]) within(r.closedAfter);
  });

  it('a generation longer than the timeout is still answered: the timeout is the client\'s to send its request', async () => {
    const t0 = performance.now();
    const r = await short.client().chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(r.choices[0]!.message.content).toBe('42');
    expect(performance.now() - t0).toBeGreaterThan(TIMEOUT);
  });
});

describe('a body over the 4 MiB limit', () => {
  it("reaches Node's fetch and the official openai client as a 413, not a broken pipe (EPIPE) or a connection error", async () => {
    // Sizes whose upload outlasts the server's answer: the old gateway closed the socket under them.
    const answers = [...(await oversizedFromAnotherProcess(gw.base, MODEL, 5, 2)), ...(await oversizedFromAnotherProcess(gw.base, MODEL, 24, 4))];
    expect(answers.filter((a) => a.status !== 413)).toEqual([]);
    expect(answers[0]!.message).toMatch(/4 MiB/);
  });

  it('a chunked body over the limit gets its 413 too, and the gateway serves the next request', async () => {
    const res = await postRaw(gw.base, '/chat/completions', chunkedChat(MODEL, 5 << 20));
    expect(res.status).toBe(413);
    expect(((await res.json()) as ErrorBody).error).toMatchObject({ type: 'invalid_request_error', message: expect.stringMatching(/4 MiB/) });
    expect((await postRaw(gw.base, '/chat/completions', JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 2 }))).status).toBe(200);
  });

  it('a body declared larger than the gateway would read is refused at once and its connection closed', async () => {
    const port = Number(new URL(gw.base).port);
    const r = await declared(port, 100 << 20);
    expect(r.answer).toMatch(/^HTTP\/1\.1 413[^]*connection: close[^]*4 MiB/i);
    expect(r.closedAfter).toBeLessThan(1_000);
  });
});

describe('the log of ignored fields', () => {
  it('says nothing of bodies refused with a 400: arrays, strings, numbers, a body with no messages', async () => {
    logged.length = 0;
    for (const body of ['[1,2]', '"abc"', '7', '{"model":"durable-rl","surplus":1}', `{"model":"${MODEL}","messages":[{"role":"user","content":"x","extra":1}],"temperature":9,"other":1}`]) {
      for (const path of ['/chat/completions', '/completions']) {
        const res = await postRaw(gw.base, path, body);
        expect(res.status).toBe(400);
      }
    }
    expect((await postRaw(gw.base, '/completions', 'abc', 'text/plain')).status).toBe(400);
    expect(logged.filter((l) => l.includes('ignoring'))).toEqual([]);
  });
});
