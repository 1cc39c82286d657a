/**
 * A LoRA policy of the torch trainer served by the embedded engine: src/model/lora-merge.ts adds the
 * adapter into its base as peft does, and the engine's logprobs are those of peft's model (adapter
 * on) and not the base's. Refused settings are named.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pythonBin } from '../../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';
import type { BlobRef } from '../../src/domain/types';
import { OrtEngine } from '../../src/engine/ort-engine';
import { onnxOfWeights } from '../../src/model/hf-checkpoint';
import { mergeLora } from '../../src/model/lora-merge';
import { ONNX_META, readOnnxMetadata } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import type { GptConfig } from '../../src/model/arch';
import { FsBlobStore } from '../../src/store/fs-blob-store';
import { REPO_ROOT } from '../../src/paths';

const tok = loadTokenizer();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-lora-merge-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it("serves a LoRA checkpoint as peft's model with the adapter on", async () => {
  const rows = ['Compute: 17+25+8+31\n', 'Evaluate: 3*4\n<calc>3*4</calc>\n<result>12</result>\n12<|eos|>'].map((t) => tok.encode(t));
  const model = { arch: 'qwen3', dModel: 64, nLayers: 2, nHeads: 2, nKvHeads: 1, dFf: 96, maxSeq: 128 };
  const made = JSON.parse(
    execFileSync(pythonBin(), [path.join(REPO_ROOT, 'test', 'fixtures', 'torch_lora_policy.py')], {
      input: JSON.stringify({ store: dir, model, seed: 4, rank: 4, alpha: 8, rows }),
      env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' },
      maxBuffer: 16 << 20,
    }).toString(),
  ) as { manifest: BlobRef; logprobs: number[][]; base: number[][] };
  const onnx = await onnxOfWeights(new FsBlobStore(dir), { version: 1, hf: made.manifest });
  const config = JSON.parse(readOnnxMetadata(onnx)[ONNX_META.config]!) as GptConfig;
  const engine = await OrtEngine.create({ onnx, config, tokenizer: tok, weightVersion: 1 });
  let adapterGap = 0;
  let baseGap = 0;
  for (const [r, ids] of rows.entries()) {
    const scored = await engine.scoreTokens(ids.slice(0, 1), ids.slice(1));
    scored.forEach((lp, t) => {
      adapterGap = Math.max(adapterGap, Math.abs(lp - made.logprobs[r]![t]!));
      baseGap = Math.max(baseGap, Math.abs(lp - made.base[r]![t]!));
    });
  }
  await engine.release();
  expect(adapterGap).toBeLessThan(1e-4);
  // The adapter moved the outputs: the merge is not the base.
  expect(baseGap).toBeGreaterThan(1e-2);
});

it('refuses adapter settings it does not merge, naming them', () => {
  const base = new Map([['m.weight', { shape: [2, 2], data: new Float32Array(4) }]]);
  const adapter = new Map([['base_model.model.m.lora_A.weight', { shape: [1, 2], data: new Float32Array(2) }], ['base_model.model.m.lora_B.weight', { shape: [2, 1], data: new Float32Array(2) }]]);
  const config = (extra: object) => JSON.stringify({ peft_type: 'LORA', r: 1, lora_alpha: 2, ...extra });
  expect(() => mergeLora(base, config({ use_dora: true }), adapter)).toThrow(/use_dora is true/);
  expect(() => mergeLora(base, config({ rank_pattern: { m: 2 } }), adapter)).toThrow(/rank_pattern sets per-module values/);
  expect(() => mergeLora(base, config({ r: 2 }), adapter)).toThrow(/do not fit/);
  expect(mergeLora(base, config({}), adapter).get('m.weight')!.data).toEqual(new Float32Array(4));
});
