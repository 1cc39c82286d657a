/**
 * A Qwen3-architecture policy (model.arch qwen3: RMSNorm, rotary positions, grouped-query attention,
 * SwiGLU), made by the project over its own tokenizer, trained by the torch worker with LoRA and served
 * by a real vLLM: SFT (full weights), then two GRPO steps whose LoRA adapters are loaded into the
 * server at runtime. The second rollout's logprobs are those of the updated adapter, not of the
 * weights before it; every sync was checked by logprobs against the embedded engine (which serves
 * the adapter merged into its base).
 *
 * vLLM's CPU attention supports head sizes of 32 and up: the policy has two query heads of 32 and one
 * key/value head.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { names } from '../../src/store/run-names';
import { readSamples } from '../../src/contracts/sample-set';
import { freePort } from '../../scripts/lib/dev-server';
import { startVllmForModel } from '../../scripts/lib/remote-engine-for-run';
import type { RunningVllm } from '../../scripts/lib/vllm-server';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { RunConfig } from '../../src/config/schema';
import type { GptConfig } from '../../src/model/arch';
import { OrtEngine } from '../../src/engine/ort-engine';
import { onnxOfWeights, readHfManifest } from '../../src/model/hf-checkpoint';
import { ONNX_META, readOnnxMetadata } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import type { BlobStore } from '../../src/store/blob-store';
import { testEnv, tinyRunConfig, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';

const MODEL: RunConfig['model'] = { arch: 'qwen3', dModel: 64, nLayers: 2, nHeads: 2, nKvHeads: 1, dFf: 128, maxSeq: 192 };
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-qwen3-vllm-'));
let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;
let server: RunningVllm;

beforeAll(async () => {
  ctx = await testEnv('qwen3-vllm', ['orchestration', 'inference', 'tools']);
  workers = workerProcesses(ctx);
  const torch = workers.spawnTorchWorker();
  [server] = await Promise.all([
    startVllmForModel(MODEL, 1, { dir: path.join(work, 'initial'), port: await freePort(), servedModelName: 'policy', logFile: path.join(work, 'vllm.log'), lora: { maxRank: 8, maxLoras: 1 } }),
    torch.serving,
  ]);
}, 600_000);

afterAll(async () => {
  await server?.stop();
  await workers?.killAll();
  await ctx?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

async function engineOf(store: BlobStore, runId: string, version: number): Promise<OrtEngine> {
  const ref = (await store.getName(names.weights(runId, version)))!;
  const onnx = await onnxOfWeights(store, { version, hf: ref });
  return OrtEngine.create({ onnx, config: JSON.parse(readOnnxMetadata(onnx)[ONNX_META.config]!) as GptConfig, tokenizer: loadTokenizer(), weightVersion: version });
}

it('trains a Qwen3 policy with LoRA on a real vLLM: the second rollout plays the updated adapter', async () => {
  const config = tinyRunConfig({
    model: MODEL,
    trainer: { backend: 'torch', lora: { rank: 8, alpha: 16 } },
    task: { trainProblems: 200, evalProblems: 4, difficulty: { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 1 }, rl: { evalProblems: 4, testProblems: 0 } },
    sft: { steps: 40, batchSize: 16, stepsPerActivity: 40, warmupSteps: 5, learningRate: 0.01 },
    eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8, sampled: false },
    rollout: { maxTurns: 2 },
    // A large rate and an entropy bonus move the adapter far enough in one step to tell v0 and v1 apart on every sample.
    rl: { steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16, learningRate: 0.02, entropyCoeff: 0.5 },
    inference: { engine: 'openai', openai: { baseUrl: `${server.baseUrl}/v1`, model: 'policy', weightSync: { dir: path.join(work, 'sync') } } },
  });
  const { workflowId, handle } = await ctx.startTrainingRun('qwen3-lora', config);
  const result = (await handle.result()) as TrainingRunResult;
  expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 1]);
  for (const p of result.rl) expect(p.seconds.sync).toBeGreaterThan(0);
  // v0 is the SFT policy (full weights); v1 is its base with the adapter of RL step 1.
  const v0Manifest = await readHfManifest(ctx.store, (await ctx.store.getName(names.weights(workflowId, 0)))!);
  const v1Manifest = await readHfManifest(ctx.store, (await ctx.store.getName(names.weights(workflowId, 1)))!);
  expect(v0Manifest.adapter).toBeUndefined();
  expect(Object.keys(v1Manifest.adapter ?? {}).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
  expect(v1Manifest.files).toEqual(v0Manifest.files);
  // Step 2's samples came from vLLM's LoRA adapter of v1: their logprobs are v1's, not v0's. Each
  // sample's first call is scored (its context is exactly the prompt the server was sent; a merged
  // sample's later calls saw their prompts re-encoded, which an under-trained policy's odd outputs
  // do not always survive: token-in/token-out across turns is issue 38's).
  const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-2`).result()) as RolloutSummary;
  const sets = [summary.samples.planner, summary.samples.actor].filter((s) => s !== undefined);
  const samples = (await Promise.all(sets.map((s) => readSamples(ctx.store, s.ref)))).flat();
  expect(samples.length).toBeGreaterThan(0);
  expect(samples.every((s) => s.metadata.weightVersion === 1)).toBe(true);
  const [v0, v1] = await Promise.all([engineOf(ctx.store, workflowId, 0), engineOf(ctx.store, workflowId, 1)]);
  let worstV1 = 0;
  let bestV0 = Infinity;
  for (const s of samples) {
    const [a, b] = await Promise.all([v1.scoreTokens(s.promptTokens, s.responseTokens), v0.scoreTokens(s.promptTokens, s.responseTokens)]);
    const firstEnd = s.lossMask.findIndex((m, i) => m !== 1 && i > s.lossMask.indexOf(1));
    const trained = s.lossMask.flatMap((m, i) => (m === 1 && (firstEnd < 0 || i < firstEnd) ? [i] : []));
    worstV1 = Math.max(worstV1, ...trained.map((i) => Math.abs(s.logprobs[i]! - a[i]!)));
    bestV0 = Math.min(bestV0, Math.max(...trained.map((i) => Math.abs(s.logprobs[i]! - b[i]!))));
  }
  expect(worstV1).toBeLessThan(1e-3);
  expect(bestV0).toBeGreaterThan(1e-3);
  await Promise.all([v0.release(), v1.release()]);
}, 900_000);
