/**
 * The embedded engine against a real vLLM (the CPU build setup installs) serving the same weights,
 * side by side in one run on the same prompts: generated tokens per second and per-request p50/p99
 * latency at each concurrency, then the latency of getting new weights served (embedded: ONNX export
 * and a new session; vLLM: Hugging Face export and reload_weights, scripts' weight sync).
 *   npm run build && npm run bench:engine [-- --concurrency 1,16,64 --requests 64 --tokens 32 --reloads 5 --smoke]
 * The main job's policy shape with random weights (EOS suppressed, no stop strings): every request
 * generates exactly --tokens tokens on both engines, so both do the same work.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SamplingParams } from '../src/domain/types';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { RemoteOpenAIEngine } from '../src/engine/openai-engine';
import { reloadVllmWeights } from '../src/engine/vllm-weights';
import type { GptConfig } from '../src/model/arch';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { writeHfDir } from '../src/model/hf-dir';
import { initWeights, parameterCount } from '../src/model/init';
import { withLogitBias } from '../src/model/logit-bias';
import { exportOnnx } from '../src/model/onnx-export';
import { loadTokenizer } from '../src/model/tokenizer';
import { freePort } from '../scripts/lib/dev-server';
import { startVllm } from '../scripts/lib/vllm-server';
import { arg, flag } from './lib/args';

interface Row {
  engine: string;
  concurrency: number;
  tokensPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] as number;
}

/** `requests` requests, at most `concurrency` in flight, each timed from send to answer. */
async function load(complete: (prompt: string, seed: number) => Promise<{ tokenIds: number[] }>, prompts: string[], requests: number, concurrency: number, tokens: number): Promise<Omit<Row, 'engine' | 'concurrency'>> {
  const latencies: number[] = [];
  let next = 0;
  let generated = 0;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (next < requests) {
      const i = next++;
      const start = performance.now();
      const c = await complete(prompts[i % prompts.length]!, i);
      latencies.push(performance.now() - start);
      if (c.tokenIds.length !== tokens) throw new Error(`a request generated ${c.tokenIds.length} tokens, not ${tokens}: the comparison would be unfair`);
      generated += c.tokenIds.length;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return { tokensPerSec: generated / seconds, p50Ms: quantile(latencies, 0.5), p99Ms: quantile(latencies, 0.99) };
}

async function main(): Promise<void> {
  const smoke = flag('smoke');
  const concurrencies = arg('concurrency', smoke ? '1,4' : '1,16,64').split(',').map(Number);
  const requests = Number(arg('requests', smoke ? '8' : '64'));
  const tokens = Number(arg('tokens', smoke ? '8' : '32'));
  const reloads = Number(arg('reloads', smoke ? '2' : '5'));
  const tok = loadTokenizer();
  // vLLM's CPU attention needs a head size of 32 or more; the main job's policy has 32.
  const cfg: GptConfig = smoke ? { vocabSize: tok.vocabSize, maxSeq: 128, dModel: 32, nLayers: 1, nHeads: 1, dFf: 64 } : DEFAULT_GPT_CONFIG;
  const weights = withLogitBias(cfg, initWeights(cfg, 1), { [tok.eosId]: -1e4 });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-engine-'));
  const dir = writeHfDir(path.join(work, 'v0'), { config: cfg, weights, tokenizer: tok });
  const prompts = Array.from({ length: 16 }, (_, i) => `Compute: ${10 + i}+${23 + 3 * i}+${7 + i}\n`);
  const params = (seed: number): SamplingParams => ({ maxNewTokens: tokens, temperature: 1, topP: 1, stop: [], seed });

  console.log(`policy: ${parameterCount(cfg)} parameters ${JSON.stringify(cfg)}; ${requests} requests of ${tokens} tokens at concurrency ${concurrencies.join(', ')}; ${os.cpus().length} cores`);
  console.log('starting vLLM (about a minute on 2 cores)...');
  const server = await startVllm({ model: dir, port: await freePort(), servedModelName: 'bench', logFile: path.join(work, 'vllm.log') });
  const rows: Row[] = [];
  try {
    const remote = new RemoteOpenAIEngine({ baseUrl: `${server.baseUrl}/v1`, model: 'bench', tokenizer: tok });
    const ort = await OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer: tok, weightVersion: 0 });
    const embedded = new BatchingEngine(ort, 64);
    // Warm both (vLLM compiles on its first requests).
    await Promise.all(prompts.map((p, i) => remote.complete(p, params(i))));
    await embedded.completeAll(prompts, params(0));
    // Interleaved per concurrency, so both see the same machine load.
    for (const c of concurrencies) {
      rows.push({ engine: 'embedded (onnxruntime)', concurrency: c, ...(await load((p, s) => embedded.complete(p, params(s)), prompts, requests, c, tokens)) });
      rows.push({ engine: 'vLLM CPU (HTTP)', concurrency: c, ...(await load((p, s) => remote.complete(p, params(s)), prompts, requests, c, tokens)) });
    }
    await embedded.release();

    // Getting new weights served.
    const embeddedMs: number[] = [];
    const vllmExportMs: number[] = [];
    const vllmReloadMs: number[] = [];
    for (let v = 1; v <= reloads; v++) {
      const next = withLogitBias(cfg, initWeights(cfg, 1 + v), { [tok.eosId]: -1e4 });
      const t0 = performance.now();
      const e = await OrtEngine.create({ onnx: exportOnnx(cfg, next), config: cfg, tokenizer: tok, weightVersion: v });
      embeddedMs.push(performance.now() - t0);
      await e.release();
      const t1 = performance.now();
      const d = writeHfDir(path.join(work, `v${v}`), { config: cfg, weights: next, tokenizer: tok });
      const t2 = performance.now();
      await reloadVllmWeights(`${server.baseUrl}/v1`, d, v);
      vllmExportMs.push(t2 - t1);
      vllmReloadMs.push(performance.now() - t2);
    }
    console.log('\n| engine | concurrency | tokens/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|');
    for (const r of rows) console.log(`| ${r.engine} | ${r.concurrency} | ${r.tokensPerSec.toFixed(0)} | ${r.p50Ms.toFixed(1)} | ${r.p99Ms.toFixed(1)} |`);
    const med = (xs: number[]): string => quantile(xs, 0.5).toFixed(1);
    console.log(`\nnew weights served (median of ${reloads}):`);
    console.log(`| path | ms |\n|---|---:|\n| embedded: ONNX export + new session | ${med(embeddedMs)} |\n| vLLM: HF export to disk | ${med(vllmExportMs)} |\n| vLLM: pause, reload_weights, reset prefix cache, version, resume | ${med(vllmReloadMs)} |`);
  } finally {
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
