/**
 * The main job's side of inference.engine: openai with weightSync: when the config's server is on
 * loopback and nothing answers there, start a real vLLM for it (the weights it starts with are a
 * placeholder of the run's shape; the run loads its own before every rollout).
 */
import path from 'node:path';
import type { RunConfig } from '../../src/config/schema';
import { writeHfDir } from '../../src/model/hf-dir';
import { initWeights } from '../../src/model/init';
import { loadTokenizer } from '../../src/model/tokenizer';
import { DATA_DIR } from '../../src/paths';
import { startVllm, type RunningVllm } from './vllm-server';
import { writeNewModel } from './new-model';
import { createHash } from 'node:crypto';
import { resolveTokenizerDir } from '../../src/model/tokenizer-dir';

export async function ensureRemoteEngine(config: RunConfig, opts: { nice?: number } = {}): Promise<RunningVllm | undefined> {
  const o = config.inference.openai;
  if (config.inference.engine !== 'openai' || !o?.weightSync) return undefined;
  const url = new URL(o.baseUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) return undefined;
  const up = await fetch(`${url.origin}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
  if (up) return undefined;
  const m = config.model;
  const logFile = path.join(DATA_DIR, 'logs', 'vllm.log');
  console.log(`starting vLLM on ${url.origin} for the RL rollouts (about a minute; log ${path.relative(process.cwd(), logFile)})`);
  const lora = config.trainer?.lora;
  return startVllmForModel(config.model, config.seed, {
    ...(lora ? { lora: { maxRank: vllmLoraRank(lora.rank), maxLoras: (config.rl.async?.maxStaleness ?? 0) + 1 } } : {}),
    ...(config.task.chat ? { chat: { enableThinking: config.task.chat.enableThinking } } : {}),
    dir: path.join(DATA_DIR, 'vllm-initial', `${m.arch ?? 'gpt2'}-${m.dModel}x${m.nLayers}x${m.nHeads}x${m.nKvHeads ?? m.nHeads}x${m.dFf}x${m.maxSeq}${m.tokenizer ? `-${path.basename(resolveTokenizerDir(m.tokenizer))}-${createHash('sha256').update(resolveTokenizerDir(m.tokenizer)).digest('hex').slice(0, 8)}` : ''}`),
    port: Number(url.port || 80),
    servedModelName: o.model,
    logFile,
    ...(opts.nice ? { nice: opts.nice } : {}),
  });
}

/**
 * vLLM serving a placeholder of a run's model shape (initial weights of `seed`, written to `dir`):
 * a run whose weights are synced loads its own before every rollout.
 */
export function startVllmForModel(
  model: RunConfig['model'],
  seed: number,
  o: { dir: string; port: number; servedModelName: string; logFile: string; nice?: number; lora?: { maxRank: number; maxLoras: number }; chat?: { enableThinking: boolean } },
): Promise<RunningVllm> {
  const tok = loadTokenizer();
  const { dModel, nLayers, nHeads, dFf, maxSeq } = model;
  const shape = { dModel, nLayers, nHeads, dFf, maxSeq, vocabSize: tok.vocabSize };
  // GPT-2 written by the TypeScript export; Qwen3 and Llama by the torch worker's code.
  const dir =
    (model.arch ?? 'gpt2') === 'gpt2' ? writeHfDir(o.dir, { config: shape, weights: initWeights(shape, seed), tokenizer: tok }) : writeNewModel(model, seed, o.dir, model.tokenizer ? resolveTokenizerDir(model.tokenizer) : undefined);
  // Chat mode (task.chat): the server parses tool calls and thinking as the episodes do (src/chat
  // parseModelTurn is these parsers' parity), for any client that talks to it with chat completions.
  const chat = o.chat ? ['--enable-auto-tool-choice', '--tool-call-parser', 'hermes', ...(o.chat.enableThinking ? ['--reasoning-parser', 'qwen3'] : [])] : [];
  return startVllm({ model: dir, port: o.port, servedModelName: o.servedModelName, logFile: o.logFile, ...(o.nice ? { nice: o.nice } : {}), ...(o.lora ? { lora: o.lora } : {}), ...(chat.length ? { extraArgs: chat } : {}) });
}

/** vLLM takes a maximum LoRA rank from a fixed list (vllm/config/lora.py MaxLoRARanks): the smallest that holds `rank`. */
export function vllmLoraRank(rank: number): number {
  const allowed = [1, 8, 16, 32, 64, 128, 256, 320, 512];
  const fit = allowed.find((r) => r >= rank);
  if (fit === undefined) throw new Error(`trainer.lora.rank ${rank} is over vLLM's largest LoRA rank (512)`);
  return fit;
}
