/**
 * The gateway's overhead: the same chat requests sent through the OpenAI-compatible HTTP gateway
 * (official `openai` client, JSON, fastify, the chat template) and straight to the engine's batcher,
 * at 1, 16 and 64 concurrent clients, alternating the two paths in one run. p50 and p99 latency per
 * request and throughput in requests per second. The engine: the default model shape with fixed
 * random weights (what the weights are does not change the cost), 16 new tokens, no early stop.
 *
 * Then, as real agents run, with the clients in their own processes (bench/lib/gateway-client.ts,
 * forked from dist/): --procs processes × --clients-per-proc closed-loop clients of the gateway, each
 * measured for --seconds after --warm-up seconds, against the same number of concurrent callers of
 * BatchingEngine.complete in this process (no HTTP), alternating the two paths --rounds times: p50,
 * p99, requests/s, tokens/s and the gateway / engine ratios. And fair queueing: the latency of
 * --fair-clients small chat clients alone, and while one /v1/completions request of --big-prompts
 * prompts (the same sampling parameters, so it shares batches with them) is in flight, alternating.
 *
 *   npm run build && npm run bench:gateway [-- --requests 128 --rounds 2 --procs 16 --clients-per-proc 16
 *     --seconds 10 --warm-up 2 --fair-clients 16 --big-prompts 10000]
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { renderChat } from '../src/gateway/chat-template';
import { createGateway, type GatewayEngine } from '../src/gateway/server';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { initWeights } from '../src/model/init';
import { withLogitBias } from '../src/model/logit-bias';
import { exportOnnx } from '../src/model/onnx-export';
import { loadTokenizer } from '../src/model/tokenizer';
import { arg } from './lib/args';
import { closedLoop, nowMs, percentile, smallChat, type FromClient, type LoadResult, type LoadWindow, type ToClient } from './lib/load';

const MAX_TOKENS = 16;
const MODEL = 'bench';
/** The big request's prompts start with this, so the bench can tell its prompts in the engine from the small ones. */
const BIG_MARK = 'Batch item ';

function positive(name: string, fallback: string, integer = true): number {
  const v = Number(arg(name, fallback));
  if (!(v > 0) || (integer && !Number.isInteger(v))) throw new Error(`--${name} must be a positive ${integer ? 'integer' : 'number'}, got ${arg(name, fallback)}`);
  return v;
}

/** The next message of this kind from a client process (rejects if the process exits first). */
function nextMessage<K extends FromClient['kind']>(child: ChildProcess, kind: K): Promise<Extract<FromClient, { kind: K }>> {
  return new Promise((resolve, reject) => {
    const onMessage = (raw: unknown) => {
      const msg = raw as FromClient;
      if (msg.kind !== kind) return;
      cleanup();
      resolve(msg as Extract<FromClient, { kind: K }>);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      cleanup();
      reject(new Error(`a client process exited (${code ?? signal}) before sending '${kind}'`));
    };
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/** The client processes: node running dist/bench/lib/gateway-client.js, ordered over IPC. */
class ClientProcesses {
  private constructor(private readonly children: ChildProcess[]) {}

  static async start(n: number): Promise<ClientProcesses> {
    const script = path.join(__dirname, 'lib', 'gateway-client.js');
    const pool = new ClientProcesses(Array.from({ length: n }, () => fork(script, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })));
    try {
      await Promise.all(pool.children.map((c) => nextMessage(c, 'ready')));
    } catch (err) {
      pool.close();
      throw err;
    }
    return pool;
  }

  private send(k: number, msg: ToClient): void {
    this.children[k]!.send(msg);
  }

  /** clients[k] chat clients in process k (none where 0) in one window; their results merged, and the CPU time they used. */
  async chat(clients: number[], baseURL: string, window: LoadWindow): Promise<LoadResult & { cpuMs: number }> {
    const runs = clients.flatMap((n, k) => {
      if (n === 0) return [];
      const result = nextMessage(this.children[k]!, 'result');
      this.send(k, { kind: 'chat', baseURL, model: MODEL, clients: n, firstIndex: (k + 1) * 10_000_000, maxTokens: MAX_TOKENS, window });
      return [result];
    });
    const messages = await Promise.all(runs);
    const results = messages.map((m) => m.result);
    const failed = results.find((r) => r.errors > 0);
    if (failed) throw new Error(`${results.reduce((n, r) => n + r.errors, 0)} gateway requests failed; the first: ${failed.firstError}`);
    return { latenciesMs: results.flatMap((r) => r.latenciesMs), tokens: results.reduce((n, r) => n + r.tokens, 0), seconds: Math.max(...results.map((r) => r.seconds)), errors: 0, cpuMs: messages.reduce((n, m) => n + m.cpuMs, 0) };
  }

  /** Ends every running chat load at `at`. */
  stop(at: number): void {
    this.children.forEach((_, k) => this.send(k, { kind: 'stop', at }));
  }

  big(k: number, baseURL: string, prompts: string[]): Promise<Extract<FromClient, { kind: 'big-done' }>> {
    const done = nextMessage(this.children[k]!, 'big-done');
    this.send(k, { kind: 'big', baseURL, model: MODEL, prompts, maxTokens: MAX_TOKENS });
    return done;
  }

  abort(k: number): void {
    this.send(k, { kind: 'abort' });
  }

  close(): void {
    for (const c of this.children) {
      if (c.connected) c.disconnect();
      if (c.exitCode === null && c.signalCode === null) c.kill();
    }
  }
}

/** n clients spread over the first `procs` processes as evenly as they go. */
function spread(n: number, procs: number): number[] {
  return Array.from({ length: procs }, (_, k) => Math.floor(n / procs) + (k < n % procs ? 1 : 0));
}

interface Totals {
  latenciesMs: number[];
  tokens: number;
  seconds: number;
}

function add(t: Totals, r: LoadResult): void {
  t.latenciesMs.push(...r.latenciesMs);
  t.tokens += r.tokens;
  t.seconds += r.seconds;
}

function summary(t: Totals) {
  return { p50: percentile(t.latenciesMs, 50), p99: percentile(t.latenciesMs, 99), rps: t.latenciesMs.length / t.seconds, tps: t.tokens / t.seconds };
}

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');
const rate = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');
const ratio = (a: number, b: number) => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}x` : 'n/a');
const wait = (msDelay: number) => new Promise((r) => setTimeout(r, msDelay));

async function main(): Promise<void> {
  const requests = Number(arg('requests', '128'));
  const rounds = Number(arg('rounds', '2'));
  const procs = positive('procs', '16');
  const perProc = positive('clients-per-proc', '16');
  const seconds = positive('seconds', '10', false);
  const warmUp = Number(arg('warm-up', '2'));
  if (!(warmUp >= 0)) throw new Error(`--warm-up must be 0 or more seconds, got ${arg('warm-up', '2')}`);
  const fairClients = positive('fair-clients', '16');
  const bigPrompts = positive('big-prompts', '10000');
  const tokenizer = loadTokenizer();
  const cfg = DEFAULT_GPT_CONFIG;
  // No EOS: every request generates exactly MAX_TOKENS, so both paths do the same work.
  const weights = withLogitBias(cfg, initWeights(cfg, 1), { [tokenizer.eosId]: -50 });
  const engine = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer, weightVersion: 0 });
  const batcher = new BatchingEngine(engine, 64);
  // The big request's prompts, followed through the engine: when each entered it and when each left.
  const big = { calls: 0, settled: 0, servedAt: [] as number[] };
  const gatewayEngine: GatewayEngine = {
    complete: (prompt, params, options) => {
      const c = batcher.complete(prompt, params, options);
      if (!prompt.startsWith(BIG_MARK)) return c;
      big.calls++;
      return c
        .then((out) => {
          big.servedAt.push(nowMs());
          return out;
        })
        .finally(() => big.settled++);
    },
  };
  const app = createGateway({ engine: gatewayEngine, tokenizer, model: MODEL, maxSeq: cfg.maxSeq });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const baseURL = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`;
  const client = new OpenAI({ apiKey: 'none', baseURL, maxRetries: 0 });

  const viaGateway = async (i: number) => {
    await client.chat.completions.create({ model: MODEL, messages: smallChat(i), max_tokens: MAX_TOKENS, temperature: 1, seed: i });
  };
  const complete = (i: number) => batcher.complete(renderChat(smallChat(i)).text, { maxNewTokens: MAX_TOKENS, temperature: 1, topP: 1, stop: [], seed: i });
  const direct = async (i: number) => {
    await complete(i);
  };
  /** `requests` requests from `clients` concurrent clients, each sending its next one when the last returns. */
  const measure = async (send: (i: number) => Promise<void>, clients: number) => {
    const latencies: number[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: clients }, async () => {
        for (let i = next++; i < requests; i = next++) {
          const s = performance.now();
          await send(i);
          latencies.push(performance.now() - s);
        }
      }),
    );
    return { latencies, seconds: (performance.now() - t0) / 1000 };
  };

  await measure(direct, 4); // warm up onnxruntime and the HTTP stack
  await measure(viaGateway, 4);
  console.log(`engine: default model shape (${cfg.nLayers} layers, d=${cfg.dModel}), ${MAX_TOKENS} new tokens per request, ${requests} requests per measurement, ${rounds} alternating rounds`);
  console.log('');
  console.log('| clients | path | p50 (ms) | p99 (ms) | requests/s | gateway overhead at p50 |');
  console.log('|---:|---|---:|---:|---:|---:|');
  for (const clients of [1, 16, 64]) {
    const d: number[] = [];
    const g: number[] = [];
    let ds = 0;
    let gs = 0;
    for (let r = 0; r < rounds; r++) {
      const a = await measure(direct, clients);
      const b = await measure(viaGateway, clients);
      d.push(...a.latencies);
      g.push(...b.latencies);
      ds += a.seconds;
      gs += b.seconds;
    }
    const p50d = percentile(d, 50);
    const p50g = percentile(g, 50);
    console.log(`| ${clients} | engine | ${p50d.toFixed(1)} | ${percentile(d, 99).toFixed(1)} | ${((rounds * requests) / ds).toFixed(1)} | |`);
    console.log(`| ${clients} | gateway | ${p50g.toFixed(1)} | ${percentile(g, 99).toFixed(1)} | ${((rounds * requests) / gs).toFixed(1)} | +${(p50g - p50d).toFixed(1)} ms (${((100 * (p50g - p50d)) / p50d).toFixed(0)}%) |`);
  }

  // Clients in their own processes: the last process sends the big request, the others the small ones.
  const pool = await ClientProcesses.start(procs + 1);
  try {
    const total = procs * perProc;
    const windowFrom = (): LoadWindow => ({ startAt: nowMs() + 250, warmUpMs: warmUp * 1000, durationMs: seconds * 1000 });
    /** A load in this window, and the sizes of the engine batches run inside it (after the warm-up). */
    const measured = async <R extends LoadResult>(window: LoadWindow, batches: number[], load: Promise<R>): Promise<R> => {
      let first = Number.POSITIVE_INFINITY;
      const mark = setTimeout(() => (first = batcher.batchSizes.length), Math.max(0, window.startAt + window.warmUpMs - nowMs()));
      const result = await load;
      clearTimeout(mark);
      batches.push(...batcher.batchSizes.slice(first));
      return result;
    };
    const mean = (xs: number[]) => (xs.length > 0 ? xs.reduce((x, y) => x + y, 0) / xs.length : Number.NaN);
    // Warm up the client processes (each one's first requests load and compile its HTTP stack, and
    // its connections open), unmeasured.
    await pool.chat(spread(total, procs), baseURL, { startAt: nowMs() + 250, warmUpMs: 0, durationMs: Math.max(1000, warmUp * 1000) });
    const eng: Totals = { latenciesMs: [], tokens: 0, seconds: 0 };
    const gw: Totals = { latenciesMs: [], tokens: 0, seconds: 0 };
    const batchesEng: number[] = [];
    const batchesGw: number[] = [];
    // CPU time used (ms, all threads) and wall time (ms) of each path's loads, warm-ups included.
    const cpu = { engine: 0, gateway: 0, clients: 0, engineWall: 0, gatewayWall: 0 };
    const cpuMs = (since: NodeJS.CpuUsage) => {
      const u = process.cpuUsage(since);
      return (u.user + u.system) / 1000;
    };
    for (let r = 0; r < rounds; r++) {
      const w1 = windowFrom();
      let c0 = process.cpuUsage();
      add(eng, await measured(w1, batchesEng, closedLoop(async (i) => (await complete(i)).tokenIds.length, total, w1)));
      cpu.engine += cpuMs(c0);
      cpu.engineWall += nowMs() - w1.startAt;
      const w2 = windowFrom();
      c0 = process.cpuUsage();
      const viaProcesses = await measured(w2, batchesGw, pool.chat(spread(total, procs), baseURL, w2));
      cpu.gateway += cpuMs(c0);
      cpu.gatewayWall += nowMs() - w2.startAt;
      cpu.clients += viaProcesses.cpuMs;
      add(gw, viaProcesses);
    }
    const e = summary(eng);
    const g = summary(gw);
    console.log('');
    console.log(
      `${total} concurrent clients in ${procs} client processes × ${perProc} (official openai client, node from dist/), against ${total} concurrent callers of BatchingEngine.complete in the gateway's process (no HTTP); ` +
        `each path ${seconds} s measured after ${warmUp} s warm-up, ${rounds} alternating rounds; tokens/s counts generated tokens`,
    );
    console.log('');
    console.log('| path | clients | p50 (ms) | p99 (ms) | requests/s | tokens/s | mean batch |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    console.log(`| engine, in-process | ${total} | ${ms(e.p50)} | ${ms(e.p99)} | ${rate(e.rps)} | ${rate(e.tps, 0)} | ${rate(mean(batchesEng))} |`);
    console.log(`| gateway, ${procs} processes × ${perProc} clients | ${total} | ${ms(g.p50)} | ${ms(g.p99)} | ${rate(g.rps)} | ${rate(g.tps, 0)} | ${rate(mean(batchesGw))} |`);
    console.log(`| gateway / engine | | ${ratio(g.p50, e.p50)} | ${ratio(g.p99, e.p99)} | ${ratio(g.rps, e.rps)} | ${ratio(g.tps, e.tps)} | |`);
    console.log('');
    console.log(
      `CPU while loaded (cores busy, warm-ups included; the machine has ${os.cpus().length}): engine path: the bench process ${(cpu.engine / cpu.engineWall).toFixed(2)}; ` +
        `gateway path: the gateway's process ${(cpu.gateway / cpu.gatewayWall).toFixed(2)}, the client processes ${(cpu.clients / cpu.gatewayWall).toFixed(2)}`,
    );

    // Fair queueing: small requests alone, then beside one /v1/completions request of bigPrompts prompts.
    const fair = spread(fairClients, procs);
    const bigProc = procs;
    const prompts = Array.from({ length: bigPrompts }, (_, j) => `${BIG_MARK}${j}: ${j % 97}+${(j * 7) % 89}=`);
    const alone: Totals = { latenciesMs: [], tokens: 0, seconds: 0 };
    const beside: Totals = { latenciesMs: [], tokens: 0, seconds: 0 };
    const batchesAlone: number[] = [];
    const batchesBeside: number[] = [];
    const admissionMs: number[] = [];
    const cancelMs: number[] = [];
    let bigServed = 0;
    let bigFinished = 0;
    for (let r = 0; r < rounds; r++) {
      const w1 = windowFrom();
      add(alone, await measured(w1, batchesAlone, pool.chat(fair, baseURL, w1)));

      const calls0 = big.calls;
      const served0 = big.servedAt.length;
      const sent = nowMs();
      let ended = false;
      const bigRequest = pool.big(bigProc, baseURL, prompts).finally(() => (ended = true));
      // Measured once all its prompts are in the engine's queue (the gateway tokenized them first).
      while (big.calls - calls0 < bigPrompts) {
        if (ended) {
          const d = await bigRequest;
          throw new Error(`the ${bigPrompts}-prompt request ended before all its prompts were queued: ${d.error ?? `${d.choices} choices`}`);
        }
        await wait(5);
      }
      admissionMs.push(nowMs() - sent);
      const w2 = windowFrom();
      const load = measured(w2, batchesBeside, pool.chat(fair, baseURL, w2));
      // If the big request finishes first, the window ends with it.
      bigRequest.then(
        () => pool.stop(nowMs()),
        () => undefined,
      );
      const result = await load;
      add(beside, result);
      const from = w2.startAt + w2.warmUpMs;
      bigServed += big.servedAt.slice(served0).filter((t) => t >= from && t <= from + result.seconds * 1000).length;
      // Still running: the client disconnects and the gateway cancels what is left of it.
      const abortAt = nowMs();
      if (!ended) pool.abort(bigProc);
      const d = await bigRequest;
      if (!d.ok && !d.aborted) throw new Error(`the ${bigPrompts}-prompt request failed: ${d.error}`);
      if (d.ok) bigFinished++;
      while (big.settled < big.calls) await wait(5);
      if (!d.ok) cancelMs.push(nowMs() - abortAt);
    }
    const a = summary(alone);
    const b = summary(beside);
    console.log('');
    console.log(
      `Fair queueing: ${fairClients} small chat clients (in ${fair.filter((n) => n > 0).length} client processes) alone, and while one /v1/completions request of ${bigPrompts} prompts ` +
        `(max_tokens ${MAX_TOKENS}, temperature 1, as the small ones, so they can share batches; from another process) is in the engine; ${seconds} s measured after ${warmUp} s warm-up each, ${rounds} alternating rounds`,
    );
    console.log('');
    console.log('| small requests | p50 (ms) | p99 (ms) | requests/s | measured, all rounds (s) | mean batch |');
    console.log('|---|---:|---:|---:|---:|---:|');
    console.log(`| alone | ${ms(a.p50)} | ${ms(a.p99)} | ${rate(a.rps)} | ${alone.seconds.toFixed(1)} | ${rate(mean(batchesAlone))} |`);
    console.log(`| with the ${bigPrompts}-prompt request in flight | ${ms(b.p50)} | ${ms(b.p99)} | ${rate(b.rps)} | ${beside.seconds.toFixed(1)} | ${rate(mean(batchesBeside))} |`);
    console.log(`| with / alone | ${ratio(b.p50, a.p50)} | ${ratio(b.p99, a.p99)} | ${ratio(b.rps, a.rps)} | | |`);
    console.log('');
    console.log(
      `The ${bigPrompts}-prompt request: all its prompts queued ${rate(mean(admissionMs), 0)} ms after it was sent (mean of ${admissionMs.length}); ${rate(bigServed / beside.seconds, 0)} of its prompts served per second while measured; ` +
        (bigFinished > 0 ? `it finished before the window ended in ${bigFinished} of ${rounds} rounds (the window ended with it); ` : '') +
        (cancelMs.length > 0 ? `aborted after the window, its remaining prompts left the engine in ${rate(mean(cancelMs), 0)} ms (mean of ${cancelMs.length})` : ''),
    );
  } finally {
    pool.close();
  }
  await app.close();
  await engine.release();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
