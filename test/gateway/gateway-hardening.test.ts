/**
 * The gateway's defects, each reproduced first: a large request starving small ones, aborted requests
 * computing on, vLLM's leniency (unknown fields, every message shape, tool_choice required or named,
 * response_format), streaming whole choices instead of tokens, deep tool schemas, the bytes of a
 * token that splits a character; and after all the abuse, a normal request is served at once and the
 * heap is back at its level. On the embedded policy (ONNX engine, small random weights with the
 * end-of-sequence token pushed down, so generations run to max_tokens) and the official `openai` client.
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import type { Completion, SamplingParams } from '../../src/domain/types';
import { BatchingEngine, type CompleteOptions } from '../../src/engine/batcher';
import { OrtEngine } from '../../src/engine/ort-engine';
import type { PolicyEngine } from '../../src/engine/types';
import type { GatewayEngine } from '../../src/gateway/server';
import { listenGateway } from '../helpers/gateway';
import { initWeights } from '../../src/model/init';
import { withLogitBias } from '../../src/model/logit-bias';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { evaluateExpression } from '../../src/tasks/arith/calc';
import type { Timeline } from '../../src/timeline/types';

const tokenizer = loadTokenizer();
const cfg = { vocabSize: tokenizer.vocabSize, maxSeq: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 };
const MODEL = 'durable-rl-embedded';

/** Tokens the engine generated, summed over every batch: what aborted requests still cost. */
let generatedTokens = 0;
let ort: OrtEngine;
let batcher: BatchingEngine;
const logged: string[] = [];
const recorded = new Map<string, Timeline[]>();

async function serve(engine: GatewayEngine) {
  const g = await listenGateway({
    engine,
    tokenizer,
    model: MODEL,
    maxSeq: cfg.maxSeq,
    log: (line) => logged.push(line),
    recorder: async (episode, t) => void recorded.set(episode, [...(recorded.get(episode) ?? []), t]),
  });
  return { ...g, client: g.client() };
}

let gw: Awaited<ReturnType<typeof serve>>;
const post = (path: string, body: object, signal?: AbortSignal) =>
  fetch(`${gw.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: MODEL, ...body }), ...(signal ? { signal } : {}) });

beforeAll(async () => {
  const weights = withLogitBias(cfg, initWeights(cfg, 3), { [tokenizer.eosId]: -30 });
  ort = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer, weightVersion: 0, threads: 1 });
  const counting: PolicyEngine = {
    weightVersion: 0,
    generate: async (prompts, params, options) => {
      const out = await ort.generate(prompts, params, options);
      for (const c of out) generatedTokens += c.tokenIds.length;
      return out;
    },
  };
  batcher = new BatchingEngine(counting, 64);
  gw = await serve({ complete: (p, params, o) => batcher.complete(p, params, o) });
});

afterAll(async () => {
  await gw?.app.close();
  await ort?.release();
});

describe('scheduling and cancellation', () => {
  it('serves a small request while a 10,000-prompt request is running, instead of after it', async () => {
    let bigDone = false;
    const big = post('/completions', { prompt: Array.from({ length: 10_000 }, (_, i) => `Evaluate: ${i}+1\n`), max_tokens: 2, temperature: 0 }).then(async (r) => {
      bigDone = true;
      return r;
    });
    // Let the big request reach the batcher first.
    while (batcher.queued < 5_000) await new Promise((r) => setTimeout(r, 5));
    const small = await gw.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 3 });
    expect(small.choices[0]!.message.content).toBeDefined();
    // Served in the next batch: thousands of the big request's prompts were still waiting.
    expect(bigDone).toBe(false);
    expect(batcher.queued).toBeGreaterThan(1_000);
    const res = await big;
    expect(res.status).toBe(200);
    expect(((await res.json()) as { choices: unknown[] }).choices).toHaveLength(10_000);
  }, 120_000);

  it('stops generating for clients that disconnect: queued prompts leave, running rows end at the next step', async () => {
    const before = generatedTokens;
    const aborts = Array.from({ length: 20 }, () => new AbortController());
    const heavy = aborts.map((a, i) =>
      post('/completions', { prompt: Array.from({ length: 32 }, () => `Evaluate: ${i}*7\n`), max_tokens: 100, n: 4 }, a.signal).then(
        () => 'served',
        () => 'aborted',
      ),
    );
    while (generatedTokens === before && batcher.queued < 2_000) await new Promise((r) => setTimeout(r, 2));
    await new Promise((r) => setTimeout(r, 50));
    for (const a of aborts) a.abort();
    expect(await Promise.all(heavy)).toEqual(Array(20).fill('aborted'));
    // The next request is served promptly: nothing of the 2,560 aborted rows is left to run.
    const small = await gw.client.completions.create({ model: MODEL, prompt: 'Evaluate: 1+2\n', max_tokens: 2 });
    expect(small.choices).toHaveLength(1);
    expect(batcher.queued).toBe(0);
    // 2,560 rows × 100 tokens were asked for; far less than a tenth of it was computed.
    expect(generatedTokens - before).toBeLessThan(25_600);
  }, 120_000);
});

describe("vLLM's leniency", () => {
  it('accepts what real clients send: unknown fields (logged once each), neutral penalties, every message shape', async () => {
    const body = {
      messages: [
        { role: 'developer', content: 'Answer with a number.' },
        { role: 'system', content: [{ type: 'text', text: 'Be brief.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Evaluate: ' }, { type: 'text', text: '2+3\n' }], name: 'ana' },
        { role: 'assistant', content: null, function_call: null, refusal: null, annotations: [], audio: null, reasoning_content: 'think', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{"expression":"2+3"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: '5' }] },
        { role: 'assistant', content: [{ type: 'text', text: '5' }], refusal: null },
        { role: 'user', content: 'Evaluate: 1+1\n' },
      ],
      tools: [{ type: 'function', function: { name: 'calc', parameters: { type: 'object', properties: { expression: { type: 'string' } } }, strict: null } }],
      max_tokens: 4,
      frequency_penalty: 0,
      presence_penalty: 0,
      logit_bias: {},
      parallel_tool_calls: false,
      response_format: { type: 'text' },
      store: false,
      metadata: { run: 'x' },
      service_tier: 'auto',
    };
    for (let i = 0; i < 2; i++) expect((await post('/chat/completions', body)).status).toBe(200);
    const said = logged.filter((l) => l.includes("'store'") || l.includes("'metadata'") || l.includes("'service_tier'") || l.includes('annotations'));
    expect(said).toHaveLength(4);
  });

  it('refuses by name what cannot be honoured: a non-zero penalty, a JSON response format, an image, an unknown named tool', async () => {
    const msg = [{ role: 'user', content: 'x' }];
    const cases: Array<[object, string, RegExp]> = [
      [{ messages: msg, presence_penalty: 0.3 }, 'presence_penalty', /not supported/],
      [{ messages: msg, logit_bias: { '5': 10 } }, 'logit_bias', /not supported/],
      [{ messages: msg, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'response_format', /json_schema cannot be honoured/],
      [{ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:' } }] }] }, 'messages.0.content.0', /'image_url' part/],
      [{ messages: msg, tools: [{ type: 'function', function: { name: 'calc' } }], tool_choice: { type: 'function', function: { name: 'search' } } }, 'tool_choice.function.name', /not among the tools/],
      [{ messages: msg, tool_choice: 'required' }, 'tool_choice', /requires tools/],
    ];
    for (const [body, param, message] of cases) {
      const res = await post('/chat/completions', body);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param, message: expect.stringMatching(message) });
    }
  });

  it('tool_choice required or naming calc makes every choice one calculator call the calculator can run (constrained decoding)', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'calc', parameters: { type: 'object', properties: { expression: { type: 'string' } } } } }];
    for (const tool_choice of ['required', { type: 'function', function: { name: 'calc' } }] as const) {
      const r = await gw.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 12+30\n' }], tools, tool_choice, n: 8, seed: 5, max_tokens: 120 });
      const calls = r.choices.filter((c) => c.finish_reason === 'tool_calls');
      // A random policy may run out of room before closing the call; the constraint never lets it write anything else.
      expect(calls.length).toBeGreaterThanOrEqual(4);
      for (const c of r.choices) {
        if (c.finish_reason === 'tool_calls') {
          expect(c.message.content).toBeNull();
          const call = c.message.tool_calls![0]! as { function: { name: string; arguments: string } };
          expect(call.function.name).toBe('calc');
          expect(() => evaluateExpression((JSON.parse(call.function.arguments) as { expression: string }).expression)).not.toThrow();
        } else expect(c.finish_reason).toBe('length');
      }
    }
  });

  it("serves LangChain's withStructuredOutput (a named tool) and its streaming", async () => {
    const llm = new ChatOpenAI({ model: MODEL, apiKey: 'none', configuration: { baseURL: gw.base }, maxTokens: 120, temperature: 1, maxRetries: 0 });
    const structured = llm.withStructuredOutput(z.object({ expression: z.string() }), { name: 'calc', method: 'functionCalling' });
    let got: { expression: string } | undefined;
    for (let i = 0; i < 6 && !got; i++) got = await structured.invoke('Evaluate: 7*6\n').catch(() => undefined);
    expect(got).toEqual({ expression: expect.any(String) });
    expect(() => evaluateExpression(got!.expression)).not.toThrow();
    let streamed = '';
    let chunks = 0;
    for await (const chunk of await llm.stream('Evaluate: 4+4\n')) {
      streamed += typeof chunk.content === 'string' ? chunk.content : '';
      chunks++;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(streamed.length).toBeGreaterThan(0);
  }, 60_000);
});

describe('streaming', () => {
  it('sends each choice token by token, adding up to the non-streamed message', async () => {
    const req = { model: MODEL, messages: [{ role: 'user' as const, content: 'Compute: 5+6\n' }], max_tokens: 24, seed: 9, n: 2, logprobs: true };
    const plain = await gw.client.chat.completions.create(req);
    const content = ['', ''];
    const deltas = [0, 0];
    const lps: number[][] = [[], []];
    for await (const chunk of await gw.client.chat.completions.create({ ...req, stream: true })) {
      for (const c of chunk.choices) {
        if (c.delta.content) {
          content[c.index] += c.delta.content;
          deltas[c.index]! += 1;
        }
        for (const l of c.logprobs?.content ?? []) lps[c.index]!.push(l.logprob);
      }
    }
    for (const k of [0, 1]) {
      expect(content[k]).toBe(plain.choices[k]!.message.content);
      expect(lps[k]).toEqual(plain.choices[k]!.logprobs!.content!.map((l) => l.logprob));
      expect(deltas[k]).toBeGreaterThan(5);
    }
  });

  it('writes a token before the engine has finished the choice', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ids = tokenizer.encode('hello world');
    const slow: GatewayEngine = {
      complete: async (prompt: string, params: SamplingParams, o?: CompleteOptions): Promise<Completion> => {
        o?.onToken?.(ids[0]!, -0.5);
        await gate;
        for (const t of ids.slice(1)) o?.onToken?.(t, -0.5);
        return { text: 'hello world', promptTokenIds: tokenizer.encode(prompt), tokenIds: ids, logprobs: ids.map(() => -0.5), entropy: ids.map(() => 0), finishReason: 'length' };
      },
    };
    const other = await serve(slow);
    try {
      const stream = await other.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 5 });
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (text === tokenizer.decode([ids[0]!])) release();
      }
      expect(text).toBe('hello world');
    } finally {
      await other.app.close();
    }
  });

  it("holds back a split UTF-8 character, and logprobs carry each token's own bytes", async () => {
    const ids = tokenizer.encode('é!'); // two byte tokens for é, then !
    const scripted: GatewayEngine = {
      complete: async (prompt: string, _p: SamplingParams, o?: CompleteOptions): Promise<Completion> => {
        for (const t of ids) o?.onToken?.(t, -1);
        return { text: 'é!', promptTokenIds: tokenizer.encode(prompt), tokenIds: ids, logprobs: ids.map(() => -1), entropy: ids.map(() => 0), finishReason: 'length' };
      },
    };
    const other = await serve(scripted);
    try {
      const r = await other.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], logprobs: true, max_tokens: 3 });
      expect(r.choices[0]!.logprobs!.content!.map((l) => l.bytes)).toEqual([[0xc3], [0xa9], [0x21]]);
      expect(Buffer.from(r.choices[0]!.logprobs!.content!.flatMap((l) => l.bytes!)).toString('utf8')).toBe('é!');
      const deltas: string[] = [];
      for await (const chunk of await other.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 3 })) {
        if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
      }
      expect(deltas).toEqual(['é', '!']);
    } finally {
      await other.app.close();
    }
  });
});

describe('abuse', () => {
  it('refuses a tool schema nested 5,000 deep with a 400 naming it', async () => {
    // Written as text: JSON.stringify itself cannot go 5,000 deep.
    const deep = `${'{"type":"object","properties":{"x":'.repeat(5_000)}{"type":"string"}${'}}'.repeat(5_000)}`;
    const body = `{"model":"${MODEL}","max_tokens":1,"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"calc","parameters":${deep}}}]}`;
    const res = await fetch(`${gw.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string; message: string } }).error).toMatchObject({ param: 'tools.0.function.parameters', message: expect.stringMatching(/nested more than 64 levels/) });
  });

  it('after malformed, oversized, concurrent, aborted and slow requests, serves a normal one in milliseconds and its heap returns to its level', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const normal = () => gw.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 2 });
    const big = 'Evaluate: 1+2\n'.repeat(200_000);
    const abuseRound = async () => {
      const abuse: Array<Promise<unknown>> = [];
      for (let i = 0; i < 5; i++) {
        abuse.push(fetch(`${gw.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model": [' }));
        abuse.push(post('/completions', { prompt: big, max_tokens: 2 }));
        abuse.push(post('/chat/completions', { messages: [{ role: 'user', content: big }] }));
        const a = new AbortController();
        abuse.push(post('/completions', { prompt: Array.from({ length: 64 }, () => 'Evaluate: 9*9\n'), max_tokens: 100 }, a.signal).catch(() => undefined));
        setTimeout(() => a.abort(), 30);
      }
      abuse.push(...Array.from({ length: 64 }, (_, i) => post('/chat/completions', { messages: [{ role: 'user', content: `Evaluate: ${i}+1\n` }], max_tokens: 8 })));
      // A slow client: headers sent, the body never finished, then gone.
      const slow = new AbortController();
      const stalled = fetch(`${gw.base}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"model":')) }), duplex: 'half', signal: slow.signal } as RequestInit).catch(() => undefined);
      await Promise.all(abuse);
      slow.abort();
      await stalled;
    };
    // The first round warms what is made once (caches, pools); later rounds must not grow the heap.
    await abuseRound();
    gc();
    const steady = process.memoryUsage().heapUsed;
    await abuseRound();
    await abuseRound();
    const t0 = performance.now();
    await normal();
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(batcher.queued).toBe(0);
    gc();
    expect(process.memoryUsage().heapUsed - steady).toBeLessThan(8 << 20);
  }, 120_000);
});
