/**
 * The Hugging Face export against the reference implementation: transformers (installed by setup
 * in the project's Python environment) loads the directory as GPT2LMHeadModel and its logits equal
 * the ONNX engine's and tfjs's; its tokenizer encodes like the project's, and the chat template
 * renders OpenAI messages as the gateway does. Import is the exact inverse of export.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import type { GptConfig } from '../../src/model/arch';
import { initTfBackend } from '../../src/model/backend';
import { Gpt } from '../../src/model/gpt';
import { readHfDir, writeHfDir } from '../../src/model/hf-dir';
import { exportHf, HfFormatError, importHf } from '../../src/model/hf-export';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { renderChat } from '../../src/gateway/chat-template';
import { REPO_ROOT } from '../../src/paths';
import { pythonBin } from '../../scripts/lib/python-env';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTrainingActivities } from '../../activities/training';
import { decodeCheckpoint } from '../../src/model/checkpoint';
import { tempStore } from '../helpers/store';
import type { CheckpointInfo } from '../../src/contracts/weights';
import { maxAbsDiff, ortRun, sharpWeights, tfLogits } from './helpers';

const tok = loadTokenizer();
const cfg: GptConfig = { vocabSize: tok.vocabSize, maxSeq: 48, dModel: 32, nLayers: 2, nHeads: 4, dFf: 64 };
const weights = sharpWeights(cfg, 13, 4);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-export-'));

interface Reference {
  architecture: string;
  logits: number[][][];
  encoded: number[][];
  rendered: string[];
}

function transformers(request: object): Reference {
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'scripts', 'python', 'hf_reference.py')], {
    input: JSON.stringify({ dir, ...request }),
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out.toString('utf8')) as Reference;
}

const texts = ['Compute: 17+25+8+31\n', 'ACT 1: 17+25\nACT 2: 8*31\n<|eos|>RESULT 1: 42\n', 'Evaluate: 3*4\n<calc>3*4</calc>\n<result>12</result>\n12<|eos|>'];
const rows = texts.map((t) => tok.encode(t));
let reference: Reference;

beforeAll(() => {
  writeHfDir(dir, { config: cfg, weights, tokenizer: tok, meta: { run_id: 'test', step: '7' } });
  reference = transformers({
    ids: rows,
    texts,
    chats: [
      [
        { role: 'user', content: 'Evaluate: 3*4\n' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: { expression: '3*4' } } }] },
        { role: 'tool', content: '12' },
        { role: 'assistant', content: '12' },
      ],
    ],
  });
}, 120_000);

test('transformers loads the directory as GPT2LMHeadModel with logits equal to the ONNX engine and tfjs (1e-4)', async () => {
  expect(reference.architecture).toBe('GPT2LMHeadModel');
  const session = await ort.InferenceSession.create(exportOnnx(cfg, weights), { intraOpNumThreads: 1 });
  await initTfBackend();
  const model = Gpt.fromWeights(cfg, weights);
  try {
    for (const [r, ids] of rows.entries()) {
      const hf = Float32Array.from(reference.logits[r]!.flat());
      const pos = [ids.map((_, i) => i)];
      const mask = [ids.map(() => 1)];
      const onnx = (await ortRun(session, cfg, [ids], pos, mask)).logits;
      expect(maxAbsDiff(hf, onnx)).toBeLessThan(1e-4);
      expect(maxAbsDiff(hf, tfLogits(model, [ids], pos, mask))).toBeLessThan(1e-4);
    }
  } finally {
    model.dispose();
    await session.release();
  }
});

test("the exported tokenizer encodes like the project's, and the chat template renders the Plan/Act protocol", () => {
  expect(reference.encoded).toEqual(rows);
  const { text } = renderChat([
    { role: 'user', content: 'Evaluate: 3*4\n' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calc', arguments: '{"expression":"3*4"}' } }] },
    { role: 'tool', content: '12' },
    { role: 'assistant', content: '12' },
  ]);
  expect(reference.rendered).toEqual([text]);
});

test('import is the exact inverse of export, and the directory says what it holds', () => {
  const back = readHfDir(dir);
  expect(back.config).toEqual(cfg);
  for (const [name, w] of Object.entries(weights)) expect(Array.from(back.weights[name]!)).toEqual(Array.from(w));
  expect(back.tokenizerJson).toBe(fs.readFileSync(path.join(REPO_ROOT, 'assets', 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  expect(config).toMatchObject({ architectures: ['GPT2LMHeadModel'], tie_word_embeddings: false, durable_rl: { run_id: 'test', step: '7' } });
  expect(JSON.parse(fs.readFileSync(path.join(dir, 'generation_config.json'), 'utf8'))).toMatchObject({ temperature: 1, top_p: 1, top_k: 0, repetition_penalty: 1 });
});

test('a directory the policy cannot load is refused, naming the file and field', () => {
  const files = exportHf({ config: cfg, weights, tokenizerJson: '{}', eosId: tok.eosId, padId: tok.padId });
  const config = JSON.parse(files['config.json']) as Record<string, unknown>;
  const bad = (over: Record<string, unknown>): string => JSON.stringify({ ...config, ...over });
  expect(() => importHf(bad({ model_type: 'llama' }), files['model.safetensors'])).toThrow(new HfFormatError('config.json: model_type is "llama"; only gpt2 (GPT2LMHeadModel) maps onto the embedded policy'));
  expect(() => importHf(bad({ activation_function: 'relu' }), files['model.safetensors'])).toThrow(/activation_function is "relu"/);
  expect(() => importHf(bad({ layer_norm_epsilon: 1e-6 }), files['model.safetensors'])).toThrow(/layer_norm_epsilon is 0.000001/);
  expect(() => importHf(bad({ n_embd: 64 }), files['model.safetensors'])).toThrow(/wte.weight has shape \[300,32\], config.json implies \[300,64\]/);
  expect(() => importHf(files['config.json'], files['model.safetensors'].subarray(0, 100))).toThrow(/model.safetensors: header length/);
  expect(() => readHfDir(path.join(dir, 'missing'))).toThrow(/has no config.json/);
});

test('init.fromHf: the checkpointFromHf activity starts a run from an exported directory, refusing another shape or tokenizer by name', async () => {
  const store = tempStore('from-hf');
  const activities = createTrainingActivities({ store });
  const env = new MockActivityEnvironment();
  const model = { maxSeq: cfg.maxSeq, dModel: cfg.dModel, nLayers: cfg.nLayers, nHeads: cfg.nHeads, dFf: cfg.dFf };
  const ckpt: CheckpointInfo = await env.run(activities.checkpointFromHf, { runId: 'from-hf-run', dir, model });
  expect(ckpt.step).toBe(0);
  const loaded = decodeCheckpoint(await store.get(ckpt.ref));
  expect(loaded.config).toEqual(cfg);
  for (const [name, w] of Object.entries(weights)) expect(Array.from(loaded.weights[name]!)).toEqual(Array.from(w));
  const otherShape = await env.run(activities.checkpointFromHf, { runId: 'from-hf-run-2', dir, model: { ...model, dModel: 64 } }).catch((e: unknown) => e);
  expect(otherShape).toMatchObject({ type: 'ConfigError', nonRetryable: true, message: expect.stringMatching(/^init\.fromHf: model\.dModel is 64 here but 32 in /) });
  const missing = await env.run(activities.checkpointFromHf, { runId: 'from-hf-run-3', dir: path.join(dir, 'nope'), model }).catch((e: unknown) => e);
  expect(missing).toMatchObject({ type: 'ConfigError', message: expect.stringMatching(/^init\.fromHf: .*has no config\.json/) });
  // A directory whose tokenizer is not the project's.
  const foreign = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-foreign-'));
  for (const f of fs.readdirSync(dir)) fs.copyFileSync(path.join(dir, f), path.join(foreign, f));
  const tj = JSON.parse(fs.readFileSync(path.join(foreign, 'tokenizer.json'), 'utf8')) as { model: { vocab: Record<string, number> } };
  const [a, b] = Object.keys(tj.model.vocab).filter((k) => k.length === 1).slice(0, 2) as [string, string];
  [tj.model.vocab[a], tj.model.vocab[b]] = [tj.model.vocab[b]!, tj.model.vocab[a]!];
  fs.writeFileSync(path.join(foreign, 'tokenizer.json'), JSON.stringify(tj));
  const otherTokenizer = await env.run(activities.checkpointFromHf, { runId: 'from-hf-run-4', dir: foreign, model }).catch((e: unknown) => e);
  expect(otherTokenizer).toMatchObject({ type: 'ConfigError', message: expect.stringMatching(/is not the project's tokenizer/) });
});
