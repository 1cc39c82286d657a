/**
 * Qwen3 and Llama policies on the embedded engine (src/model/llama-onnx.ts) against transformers:
 * random policies of each architecture, made by the torch worker's code, exported to ONNX; the
 * logits of a full forward equal Qwen3ForCausalLM's / LlamaForCausalLM's, decoding token by token
 * through the KV cache (grouped-query heads repeated into it) equals the full forward, and the
 * engine's scored logprobs equal the logits' log-softmax.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { writeNewModel } from '../../scripts/lib/new-model';
import { pythonBin } from '../../scripts/lib/python-env';
import type { RunConfigInput } from '../../src/config/schema';
import { OrtEngine } from '../../src/engine/ort-engine';
import { engineConfig, exportLlamaOnnx, readLlamaConfig } from '../../src/model/llama-onnx';
import { decodeSafetensors } from '../../src/model/safetensors';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { ortRun } from './helpers';

const tok = loadTokenizer();
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-llama-onnx-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const texts = ['Compute: 17+25+8+31\n', 'ACT 1: 17+25\nACT 2: 8*31\n<|eos|>RESULT 1: 42\n', 'Evaluate: 3*4\n<calc>3*4</calc>\n<result>12</result>\n12<|eos|>'];

function transformersLogits(dir: string, ids: number[][]): number[][][] {
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'scripts', 'python', 'hf_reference.py')], {
    input: JSON.stringify({ dir, ids }),
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
    maxBuffer: 64 << 20,
  });
  return (JSON.parse(out.toString('utf8')) as { logits: number[][][] }).logits;
}

describe.each([
  ['qwen3', { arch: 'qwen3', dModel: 64, nLayers: 2, nHeads: 2, nKvHeads: 1, dFf: 96, maxSeq: 128 }],
  ['llama', { arch: 'llama', dModel: 128, nLayers: 2, nHeads: 4, nKvHeads: 2, dFf: 96, maxSeq: 128 }],
] as Array<[string, NonNullable<RunConfigInput['model']>]>)('%s', (arch, model) => {
  const dir = path.join(root, arch);
  let onnx: Uint8Array;
  let cfg: ReturnType<typeof readLlamaConfig>;

  beforeAll(() => {
    writeNewModel(model as Parameters<typeof writeNewModel>[0], 3, dir);
    cfg = readLlamaConfig(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>);
    onnx = exportLlamaOnnx(cfg, decodeSafetensors(new Uint8Array(fs.readFileSync(path.join(dir, 'model.safetensors')))).tensors);
  }, 120_000);

  it('computes the logits transformers computes, in a full forward and token by token through the KV cache', async () => {
    expect(cfg).toMatchObject({ arch, headDim: 32, nKvHeads: model.nKvHeads, tieWordEmbeddings: false });
    const rows = texts.map((t) => tok.encode(t));
    const want = transformersLogits(dir, rows);
    const session = await ort.InferenceSession.create(onnx);
    const ecfg = engineConfig(cfg);
    const V = cfg.vocabSize;
    for (const [r, ids] of rows.entries()) {
      const full = await ortRun(session, ecfg, [ids], [ids.map((_, t) => t)], [ids.map(() => 1)]);
      let worst = 0;
      ids.forEach((_, t) => {
        for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs((full.logits[t * V + v] as number) - (want[r]![t]![v] as number)));
      });
      expect(worst).toBeLessThan(1e-4);
      // Cached decoding: the first half as a prefix, then one token at a time.
      const half = Math.floor(ids.length / 2);
      let step = await ortRun(session, ecfg, [ids.slice(0, half)], [ids.slice(0, half).map((_, t) => t)], [ids.slice(0, half).map(() => 1)]);
      for (let t = half; t < ids.length; t++) {
        step = await ortRun(session, ecfg, [[ids[t]!]], [[t]], [ids.slice(0, t + 1).map(() => 1)], step.present);
        for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs((step.logits[v] as number) - (full.logits[t * V + v] as number)));
      }
      expect(worst).toBeLessThan(1e-4);
    }
    await session.release();
  });

  it("serves as the embedded engine: scored logprobs are the logits' log-softmax, and it generates", async () => {
    const engine = await OrtEngine.create({ onnx, config: engineConfig(cfg), tokenizer: tok, weightVersion: 0 });
    const ids = tok.encode(texts[0]!);
    const want = transformersLogits(dir, [ids])[0]!;
    const scored = await engine.scoreTokens(ids.slice(0, 3), ids.slice(3));
    scored.forEach((lp, i) => {
      const row = want[2 + i]!;
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((a, x) => a + Math.exp(x - max), 0));
      expect(Math.abs(lp - (row[ids[3 + i]!]! - lse))).toBeLessThan(1e-4);
    });
    const [out] = await engine.generate(['Evaluate: 3*4\n'], { maxNewTokens: 6, temperature: 1, topP: 1, stop: [], seed: 2 });
    expect(out!.tokenIds.length).toBeGreaterThan(0);
    // Its logprobs are the sampled tokens' under the same weights.
    const rescored = await engine.scoreTokens(out!.promptTokenIds, out!.tokenIds);
    rescored.forEach((lp, i) => expect(Math.abs(lp - out!.logprobs[i]!)).toBeLessThan(1e-4));
    await engine.release();
  });
});
