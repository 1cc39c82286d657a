/**
 * `npm run gateway`: the OpenAI-compatible gateway on the embedded policy, or a recording proxy in
 * front of another OpenAI-compatible engine (a vLLM, say).
 *
 *   npm run build && npm run gateway -- [--port 8000] [--from-run <trainingRun workflow id>] [--model durable-rl]
 *   npm run build && npm run gateway -- [--port 8000] --upstream http://127.0.0.1:8001/v1 [--upstream-api-key KEY] [--tokenizer-dir DIR]
 *
 * `--api-key KEY` (or VLLM_API_KEY) makes every route but /health require `Authorization: Bearer
 * KEY`, as vLLM's own server does; without a key only loopback hosts may be bound (--host). The
 * proxy never sends that key upstream: the upstream gets --upstream-api-key (or
 * DURABLE_RL_UPSTREAM_API_KEY), else, on a keyless proxy, what the client sent (docs/gateway.md).
 *
 * The weights are the newest a run published (--from-run), else a fresh untrained policy; with
 * --upstream the upstream's models are served instead, and recorded with the ids and logprobs that
 * engine returns (src/gateway/upstream-proxy.ts); with --tokenizer-dir (the served model's tokenizer
 * directory) each recorded chat conversation is sent to it token-in/token-out (upstream-tito.ts). Either way, requests with an `x-episode-id` header
 * are recorded as timelines in the blob store (DURABLE_RL_STORE, default .data/store) under
 * gateway/episodes/<id>/.
 */
import type { AddressInfo } from 'node:net';
import { Command, InvalidArgumentError } from 'commander';
import { names } from '../src/store/run-names';
import { BatchingEngine } from '../src/engine/batcher';
import { OrtEngine } from '../src/engine/ort-engine';
import { API_KEY_ENV, checkOpenBind, resolveApiKey, UPSTREAM_API_KEY_ENV } from '../src/gateway/api-key';
import { blobStoreRecorder } from '../src/gateway/recorder';
import { createGateway } from '../src/gateway/server';
import { createRecordingProxy, upstreamUrls } from '../src/gateway/upstream-proxy';
import { loadTokenInTokenOut } from '../src/gateway/upstream-tito';
import type { GptConfig } from '../src/model/arch';
import { DEFAULT_GPT_CONFIG } from '../src/model/default-config';
import { initWeights } from '../src/model/init';
import { exportOnnx, ONNX_META, readOnnxMetadata } from '../src/model/onnx-export';
import { loadTokenizer } from '../src/model/tokenizer';
import { describeStore, openStore } from '../src/store/store-spec';
import { defaultStoreSpec } from '../workers/create-workers';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number');
  return n;
}

async function main(): Promise<void> {
  const program = new Command()
    .option('--port <n>', 'port to listen on', port, 8000)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--from-run <id>', 'serve the newest weights this trainingRun published')
    .option('--model <name>', 'model name clients ask for', 'durable-rl')
    .option('--upstream <url>', "record calls to this OpenAI-compatible engine (its base URL, e.g. http://127.0.0.1:8001/v1) instead of serving the embedded policy")
    .option('--api-key <key>', `the key clients must send as 'Authorization: Bearer <key>' (default: ${API_KEY_ENV}); required to bind beyond loopback`)
    .option('--upstream-api-key <key>', `with --upstream: the key sent to the upstream (default: ${UPSTREAM_API_KEY_ENV}); --api-key is never sent there`)
    .option('--tokenizer-dir <dir>', "with --upstream: the served model's tokenizer directory (tokenizer.json, tokenizer_config.json with its chat_template); recorded chat conversations are then sent token-in/token-out (docs/gateway.md)")
    .parse();
  const opts = program.opts<{ port: number; host: string; fromRun?: string; model: string; upstream?: string; apiKey?: string; upstreamApiKey?: string; tokenizerDir?: string }>();
  // Refused before anything loads: a server that would be open to other hosts never starts.
  const apiKey = resolveApiKey({ name: '--api-key', value: opts.apiKey }, { name: API_KEY_ENV, value: process.env[API_KEY_ENV] });
  checkOpenBind(opts.host, apiKey);
  if (opts.upstreamApiKey !== undefined && opts.upstream === undefined) throw new Error('--upstream-api-key is the key of the engine --upstream names; without --upstream there is none');
  if (opts.tokenizerDir !== undefined && opts.upstream === undefined) throw new Error('--tokenizer-dir is the tokenizer of the engine --upstream names (token-in/token-out in the recording proxy); without --upstream there is none');
  const upstreamApiKey = opts.upstream === undefined ? undefined : resolveApiKey({ name: '--upstream-api-key', value: opts.upstreamApiKey }, { name: UPSTREAM_API_KEY_ENV, value: process.env[UPSTREAM_API_KEY_ENV] });
  const keyed = apiKey === undefined ? 'no API key (loopback only)' : 'clients must send its API key';
  const storeSpec = defaultStoreSpec();
  const store = openStore(storeSpec);
  const recordsTo = `requests with an x-episode-id header are recorded in the blob store ${describeStore(storeSpec)} (names gateway/episodes/<id>/)`;
  if (opts.upstream !== undefined) {
    if (opts.fromRun !== undefined) throw new Error('--upstream and --from-run exclude each other: --from-run serves a run\'s weights on the embedded policy, --upstream records calls to another engine');
    if (program.getOptionValueSource('model') === 'cli') throw new Error("--model names the embedded policy; with --upstream clients ask for the upstream's own model names");
    const { api } = upstreamUrls(opts.upstream);
    const tokenInTokenOut = opts.tokenizerDir === undefined ? undefined : loadTokenInTokenOut(opts.tokenizerDir, '--tokenizer-dir');
    const app = createRecordingProxy({ upstream: api, recorder: blobStoreRecorder(store), apiKey, upstreamApiKey, tokenInTokenOut });
    await app.listen({ port: opts.port, host: opts.host });
    const bound = (app.server.address() as AddressInfo).port;
    const models = await fetch(`${api}/models`, { signal: AbortSignal.timeout(5000), headers: upstreamApiKey === undefined ? {} : { authorization: `Bearer ${upstreamApiKey}` } })
      .then(async (r) => {
        if (r.ok) return ((await r.json()) as { data?: Array<{ id?: unknown }> }).data?.map((m) => String(m.id)).join(', ');
        return r.status === 401 && upstreamApiKey === undefined ? `answered 401: give its key with --upstream-api-key or ${UPSTREAM_API_KEY_ENV}` : `answered ${r.status}`;
      })
      .catch((err: unknown) => `not reachable yet: ${err instanceof Error ? err.message : String(err)}`);
    const tito = tokenInTokenOut === undefined ? 'the upstream renders every request (no --tokenizer-dir)' : `conversations kept token-in/token-out with ${opts.tokenizerDir}`;
    console.log(`gateway: http://${opts.host}:${bound}/v1 is a recording proxy for ${api} (models: ${models}); ${keyed}; ${recordsTo}, with the token ids and logprobs the upstream returned; ${tito}`);
    const stop = () => void app.close().then(() => process.exit(0));
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return;
  }
  const tokenizer = loadTokenizer();
  let onnx: Uint8Array;
  let config: GptConfig;
  let source: string;
  if (opts.fromRun) {
    const ref = await store.getName(names.latestWeights(opts.fromRun));
    if (!ref) throw new Error(`run ${JSON.stringify(opts.fromRun)} has published no weights in ${describeStore(storeSpec)}`);
    onnx = await store.get(ref);
    config = JSON.parse(readOnnxMetadata(onnx)[ONNX_META.config]!) as GptConfig;
    source = `weights of run ${opts.fromRun}`;
  } else {
    config = DEFAULT_GPT_CONFIG;
    onnx = exportOnnx(config, initWeights(config, 1));
    source = 'a fresh, untrained policy (give --from-run <id> for trained weights)';
  }
  const engine = await OrtEngine.create({ onnx, config, tokenizer, weightVersion: 0, prefixCacheBytes: 64 << 20 });
  const batcher = new BatchingEngine(engine, 64);
  const app = createGateway({ engine: batcher, tokenizer, model: opts.model, maxSeq: config.maxSeq, recorder: blobStoreRecorder(store), apiKey });
  await app.listen({ port: opts.port, host: opts.host });
  const bound = (app.server.address() as AddressInfo).port;
  console.log(`gateway: http://${opts.host}:${bound}/v1 serving '${opts.model}' (${source}); ${keyed}; ${recordsTo}`);
  const stop = () => void app.close().then(() => engine.release()).then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
