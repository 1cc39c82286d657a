/**
 * Starts a real vLLM OpenAI-compatible server (the CPU build setup installs) on loopback, serving a
 * Hugging Face directory, with the settings an RL run needs from it:
 *  - `--logprobs-mode processed_logprobs`: logprobs of the distribution actually sampled (after
 *    temperature and top-p), which GRPO's ratio assumes; vLLM's default is the raw logits' logprobs.
 *  - `--generation-config vllm`: no sampling defaults from the model's generation_config.json (the
 *    client sends every parameter explicitly as well).
 *  - `--dtype float32`: the trainer's precision, so the server's logprobs match the trainer's.
 *  - VLLM_SERVER_DEV_MODE=1: the endpoints weight sync uses (/pause, /collective_rpc reload_weights,
 *    /reset_prefix_cache, /update_weight_version, /resume). Loopback only: they are not for the open
 *    network.
 * Used by the tests, `npm run engine:vllm`, the main job with configs/vllm.yaml and bench:engine.
 */
import { niced } from './niced';
import { spawnLogged } from './logged-process';
import { pythonBin } from './python-env';

export interface VllmServerOptions {
  /** A Hugging Face model directory (`npm run export:hf`). */
  model: string;
  port: number;
  /** The name clients send as `model`. */
  servedModelName: string;
  logFile: string;
  /** Context length; default the model's n_positions. */
  maxModelLen?: number;
  /** KV cache size in GiB (VLLM_CPU_KVCACHE_SPACE); small models need little. */
  kvCacheGiB?: number;
  /** Keep running after this process exits. */
  detached?: boolean;
  /** Extra server arguments. */
  extraArgs?: string[];
  /** Start it under `nice -n` (1-19): a benchmark that favours the trainer. */
  nice?: number;
  /**
   * Serve LoRA adapters loaded at runtime (a trainer.lora run): --enable-lora, the largest rank, and
   * how many adapters one batch may mix (an asynchronous run's rollouts play up to maxStaleness + 1
   * versions at once), with VLLM_ALLOW_RUNTIME_LORA_UPDATING for /v1/load_lora_adapter.
   */
  lora?: { maxRank: number; maxLoras: number };
  /** Extra environment for the server (e.g. PYTHONPATH for a test's `--logits-processors` module). */
  env?: Record<string, string>;
}

export interface RunningVllm {
  baseUrl: string;
  pid: number;
  stop(): Promise<void>;
}

export function vllmArgs(o: VllmServerOptions): string[] {
  return [
    '-m', 'vllm.entrypoints.openai.api_server',
    '--model', o.model,
    '--served-model-name', o.servedModelName,
    '--host', '127.0.0.1',
    '--port', String(o.port),
    '--dtype', 'float32',
    '--logprobs-mode', 'processed_logprobs',
    '--generation-config', 'vllm',
    '--max-logprobs', '20',
    ...(o.maxModelLen !== undefined ? ['--max-model-len', String(o.maxModelLen)] : []),
    ...(o.lora ? ['--enable-lora', '--max-lora-rank', String(o.lora.maxRank), '--max-loras', String(o.lora.maxLoras)] : []),
    ...(o.extraArgs ?? []),
  ];
}

export async function startVllm(o: VllmServerOptions, timeoutMs = 300_000): Promise<RunningVllm> {
  const [command, args] = niced(o.nice, pythonBin(), vllmArgs(o));
  const { child, exitCode, exited: exit } = spawnLogged(command, args, {
    logFile: o.logFile,
    detached: o.detached ?? false,
    env: {
      ...process.env,
      VLLM_SERVER_DEV_MODE: '1',
      ...(o.lora ? { VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' } : {}),
      VLLM_CPU_KVCACHE_SPACE: String(o.kvCacheGiB ?? 1),
      // No telemetry, no hub: the model is a local directory.
      VLLM_NO_USAGE_STATS: '1',
      HF_HUB_OFFLINE: '1',
      TRANSFORMERS_OFFLINE: '1',
      ...o.env,
    },
  });
  const baseUrl = `http://127.0.0.1:${o.port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exitCode() !== null) throw new Error(`vLLM exited with ${exitCode()} before serving; see ${o.logFile}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`vLLM did not answer /health within ${timeoutMs} ms; see ${o.logFile}`);
    }
    const ok = await fetch(`${baseUrl}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    baseUrl,
    pid: child.pid ?? -1,
    stop: async () => {
      if (exitCode() === null) {
        child.kill('SIGTERM');
        // vLLM's engine core is a child process; a server that will not stop in time is killed.
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exit;
        clearTimeout(timer);
      }
    },
  };
}
