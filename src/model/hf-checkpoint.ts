/**
 * The torch trainer's checkpoints, read on the TypeScript side: a manifest blob (kind hf-checkpoint,
 * python/durable_rl_torch/checkpoints.py) naming the blobs of a Hugging Face directory's files. The
 * embedded engine serves one by exporting it to ONNX (GPT-2: importHf then exportOnnx; Qwen3 and Llama:
 * exportLlamaOnnx); weights sync
 * writes its files into a directory vLLM reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import { getJson, type BlobStore } from '../store/blob-store';
import { REPO_ROOT } from '../paths';
import { DEFAULT_TOKENIZER_PATH, loadTokenizer, tokenizerFromDirFiles } from './tokenizer';
import type { TextTokenizer } from './tokenizer-types';
import type { BlobRef } from '../domain/types';
import { HfFormatError, importHf } from './hf-export';
import { exportOnnx } from './onnx-export';
import { exportLlamaOnnx, readLlamaConfig } from './llama-onnx';
import { decodeSafetensors, encodeSafetensors } from './safetensors';
import { mergeLora } from './lora-merge';

export const HF_CHECKPOINT_KIND = 'hf-checkpoint';
const FORMAT = 'durable-rl/hf-checkpoint/1';

export interface HfCheckpointManifest {
  format: typeof FORMAT;
  step: number;
  /** File name -> blob: config.json, model.safetensors, tokenizer files (LoRA: the frozen base). */
  files: Record<string, BlobRef>;
  /** LoRA: the adapter directory's files (adapter_config.json, adapter_model.safetensors). */
  adapter?: Record<string, BlobRef>;
}

export async function readHfManifest(store: BlobStore, ref: BlobRef): Promise<HfCheckpointManifest> {
  const m = await getJson<HfCheckpointManifest>(store, ref);
  if (m.format !== FORMAT) throw new HfFormatError(`blob ${ref.sha256.slice(0, 12)} is not a ${FORMAT} manifest (format ${JSON.stringify(m.format)})`);
  return m;
}

/** Published weights as far as serving them goes (src/contracts/weights.ts WeightsInfo has these fields). */
interface PublishedWeights {
  version: number;
  onnx?: BlobRef;
  hf?: BlobRef;
}

/** The blob-store key of published weights: one engine per distinct weights, whichever trainer made them. */
export function weightsKey(weights: PublishedWeights): string {
  const ref = weights.onnx ?? weights.hf;
  if (!ref) throw new Error(`weights v${weights.version} carry neither an ONNX nor a Hugging Face checkpoint reference`);
  return ref.sha256;
}

/** The ONNX graph of published weights: the tfjs trainer's as stored, the torch trainer's GPT-2 exported on the way. */
export async function onnxOfWeights(store: BlobStore, weights: PublishedWeights): Promise<Uint8Array> {
  if (weights.onnx) return store.get(weights.onnx);
  if (!weights.hf) throw new Error(`weights v${weights.version} carry neither an ONNX nor a Hugging Face checkpoint reference`);
  const m = await readHfManifest(store, weights.hf);
  const file = (files: Record<string, BlobRef>, name: string): Promise<Uint8Array> => {
    const ref = files[name];
    if (!ref) throw new HfFormatError(`weights v${weights.version}: the checkpoint has no ${name}`);
    return store.get(ref);
  };
  const configJson = new TextDecoder().decode(await file(m.files, 'config.json'));
  let tensors = decodeSafetensors(await file(m.files, 'model.safetensors')).tensors;
  // A LoRA policy (trainer.lora): vLLM serves base and adapter; the embedded engine their merge.
  if (m.adapter) {
    const adapterConfig = new TextDecoder().decode(await file(m.adapter, 'adapter_config.json'));
    tensors = mergeLora(tensors, adapterConfig, decodeSafetensors(await file(m.adapter, 'adapter_model.safetensors')).tensors);
  }
  const meta = { weight_version: String(weights.version), step: String(m.step) };
  const raw = JSON.parse(configJson) as Record<string, unknown>;
  if (raw.model_type === 'qwen3' || raw.model_type === 'llama') return exportLlamaOnnx(readLlamaConfig(raw), tensors, meta);
  const { config, weights: w } = importHf(configJson, encodeSafetensors([...tensors]));
  return exportOnnx(config, w, meta);
}

/**
 * The tokenizer of published weights: a torch checkpoint made over another tokenizer (model.tokenizer,
 * chat mode) ships its tokenizer.json and tokenizer_config.json, which the engine must encode and stop
 * with; every other checkpoint is the project's tokenizer, as before.
 */
export async function tokenizerOfWeights(store: BlobStore, weights: PublishedWeights): Promise<TextTokenizer> {
  const project = loadTokenizer();
  if (!weights.hf) return project;
  const files = (await readHfManifest(store, weights.hf)).files;
  const json = files['tokenizer.json'];
  const config = files['tokenizer_config.json'];
  if (!json || !config) return project;
  let tok = shippedTokenizers.get(json.sha256);
  if (!tok) {
    const parsed = await getJson<object>(store, json);
    const cfg = await getJson<Record<string, unknown>>(store, config);
    // The project's own tokenizer.json (every checkpoint before chat mode): its tokenizer, exactly as before.
    tok = JSON.stringify(parsed) === JSON.stringify(projectTokenizerJson()) ? project : tokenizerFromDirFiles(parsed, cfg, `checkpoint ${weights.hf.sha256.slice(0, 12)}`);
    shippedTokenizers.set(json.sha256, tok);
  }
  return tok;
}

const shippedTokenizers = new Map<string, TextTokenizer>();
let projectJson: object | undefined;
const projectTokenizerJson = (): object => (projectJson ??= JSON.parse(fs.readFileSync(path.join(REPO_ROOT, DEFAULT_TOKENIZER_PATH), 'utf8')) as object);
