/**
 * `npm run bench:sync`: the two ways a trained policy reaches vLLM, side by side on one real vLLM (the
 * CPU build setup installs) serving one model: a full-weight sync (the checkpoint's files written
 * out, reload_weights in place) against a LoRA sync (the adapter's files written out, loaded at
 * runtime under its own name; the frozen base loaded once). Each sync is the syncRemoteWeights
 * activity itself, its logprob check against the embedded engine included.
 *
 *   npm run build && npm run bench:sync -- [--config configs/qwen3-arch.yaml] [--model '<model.* JSON>'] [--versions 5] [--rank 16]
 *
 * The model is the config's model.* (or --model's) with random weights (bench/torch/sync_weights.py makes the
 * checkpoints as the torch worker stores them).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createInferenceActivities, type SyncRemoteWeightsResult } from '../activities/inference';
import { freePort } from '../scripts/lib/dev-server';
import { pythonBin } from '../scripts/lib/python-env';
import { startVllmForModel, vllmLoraRank } from '../scripts/lib/remote-engine-for-run';
import { TORCH_PACKAGE_DIR } from '../scripts/lib/torch-worker';
import { loadRunConfig } from '../src/config/load';
import type { BlobRef } from '../src/domain/types';
import { REPO_ROOT } from '../src/paths';
import { FsBlobStore } from '../src/store/fs-blob-store';
import { arg } from './lib/args';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function main(): Promise<void> {
  const configFile = arg('config', 'configs/qwen3-arch.yaml');
  const versions = Number(arg('versions', '5'));
  const rank = Number(arg('rank', '16'));
  const loaded = loadRunConfig(path.resolve(REPO_ROOT, configFile));
  const model = process.argv.includes('--model') ? { ...loaded.model, ...(JSON.parse(arg('model', '{}')) as object) } : loaded.model;
  const cfg = { ...loaded, model };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-bench-sync-'));
  const store = new FsBlobStore(path.join(work, 'store'));
  const made = JSON.parse(
    execFileSync(pythonBin(), [path.join(REPO_ROOT, 'bench', 'torch', 'sync_weights.py')], {
      input: JSON.stringify({ store: store.root, model: cfg.model, seed: 1, versions, rank }),
      env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
      maxBuffer: 16 << 20,
    }).toString(),
  ) as { full: BlobRef[]; lora: BlobRef[]; parameters: number; adapterParameters: number };
  const server = await startVllmForModel(cfg.model, 1, { dir: path.join(work, 'initial'), port: await freePort(), servedModelName: 'policy', logFile: path.join(work, 'vllm.log'), lora: { maxRank: vllmLoraRank(rank), maxLoras: 1 } });
  try {
    const inference = createInferenceActivities({ store });
    const remote = { baseUrl: `${server.baseUrl}/v1`, model: 'policy', synced: true };
    const env = new MockActivityEnvironment();
    const sync = (hf: BlobRef, version: number, lora: boolean): Promise<SyncRemoteWeightsResult> =>
      env.run(() =>
        inference.syncRemoteWeights({
          runId: 'bench-sync',
          weights: { version, step: version, hf, ...(lora ? { lora: true } : {}) },
          checkpoint: { name: `bench/${version}`, ref: hf, step: version },
          remote,
          dir: path.join(work, 'sync'),
        }),
      );
    const time = async (hf: BlobRef, version: number, lora: boolean) => {
      const t0 = performance.now();
      const r = await sync(hf, version, lora);
      return { ...r, seconds: (performance.now() - t0) / 1000 };
    };
    const full = [];
    for (const [i, hf] of made.full.entries()) full.push(await time(hf, i + 1, false));
    const lora = [];
    for (const [i, hf] of made.lora.entries()) lora.push(await time(hf, versions + i + 1, true));
    const bytes = (dir: string) => fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
    const fullBytes = bytes(path.join(work, 'sync', 'bench-sync', 'v1'));
    const loraBytes = bytes(path.join(work, 'sync', 'bench-sync', `v${versions + 1}-lora`));
    const row = (name: string, rs: Array<SyncRemoteWeightsResult & { seconds: number }>, written: number) =>
      `| ${name} | ${(written / 2 ** 20).toFixed(2)} | ${median(rs.map((r) => r.exportSeconds)).toFixed(3)} | ${median(rs.map((r) => r.reloadSeconds)).toFixed(3)} | ${median(rs.map((r) => r.seconds)).toFixed(3)} | ${Math.max(...rs.map((r) => r.maxLogprobDiff)).toExponential(1)} |`;
    console.log(`bench:sync ${new Date().toISOString()} on ${os.cpus().length} cores; model ${JSON.stringify(cfg.model)} (${(made.parameters / 1e6).toFixed(2)}M parameters), LoRA rank ${rank} (${(made.adapterParameters / 1e6).toFixed(3)}M); ${versions} versions each, medians`);
    console.log('');
    console.log('| sync | MiB written | write s | load s | whole sync s (check included) | max logprob diff |');
    console.log('|---|---:|---:|---:|---:|---:|');
    console.log(row('full weights (reload_weights)', full, fullBytes));
    console.log(row('LoRA adapter (load_lora_adapter), after the first', lora.slice(1), loraBytes));
    console.log(row('LoRA adapter, the first (the base reloaded too)', lora.slice(0, 1), loraBytes));
  } finally {
    await server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
