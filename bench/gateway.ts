/**
 * The gateway's overhead: the same chat requests sent through the OpenAI-compatible HTTP gateway
 * (official `openai` client, JSON, fastify, the chat template) and straight to the engine's batcher,
 * at 1, 16 and 64 concurrent clients, alternating the two paths in one run. p50 and p99 latency per
 * request and throughput in requests per second. The engine: the default model shape with fixed
 * random weights (what the weights are does not change the cost), 16 new tokens, no early stop.
 *
 *   npm run build && npm run bench:gateway [-- --requests 128 --rounds 2]
 */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { renderChat } from '../src/gateway/chat-template';
import { createGateway } from '../src/gateway/server';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { initWeights } from '../src/model/init';
import { withLogitBias } from '../src/model/logit-bias';
import { exportOnnx } from '../src/model/onnx-export';
import { loadTokenizer } from '../src/model/tokenizer';
import { arg } from './lib/args';

const MAX_TOKENS = 16;

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function main(): Promise<void> {
  const requests = Number(arg('requests', '128'));
  const rounds = Number(arg('rounds', '2'));
  const tokenizer = loadTokenizer();
  const cfg = DEFAULT_GPT_CONFIG;
  // No EOS: every request generates exactly MAX_TOKENS, so both paths do the same work.
  const weights = withLogitBias(cfg, initWeights(cfg, 1), { [tokenizer.eosId]: -50 });
  const engine = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer, weightVersion: 0 });
  const batcher = new BatchingEngine(engine, 64);
  const app = createGateway({ engine: { complete: (p, params) => batcher.complete(p, params) }, tokenizer, model: 'bench', maxSeq: cfg.maxSeq });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new OpenAI({ apiKey: 'none', baseURL: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/v1`, maxRetries: 0 });
  const messages = (i: number) => [{ role: 'user' as const, content: `Evaluate: ${i % 97}+${(i * 7) % 89}\n` }];

  const viaGateway = async (i: number) => {
    await client.chat.completions.create({ model: 'bench', messages: messages(i), max_tokens: MAX_TOKENS, temperature: 1, seed: i });
  };
  const direct = async (i: number) => {
    await batcher.complete(renderChat(messages(i)).text, { maxNewTokens: MAX_TOKENS, temperature: 1, topP: 1, stop: [], seed: i });
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
  await app.close();
  await engine.release();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
