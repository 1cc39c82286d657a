/**
 * Published weights as the files a vLLM server loads, under a weight-sync directory the server can
 * read (inference.openai.weightSync.dir): the tfjs trainer's checkpoint exported as a GPT-2
 * directory, the torch trainer's Hugging Face checkpoint written out as it is, or for a LoRA policy
 * its frozen base and its adapter apart. Each directory is written whole through a temporary sibling
 * renamed into place, so a server never reads half of one; content-named ones are written once.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CheckpointInfo, WeightsInfo } from '../contracts/weights';
import { sha256Hex } from '../store/blob-keys';
import type { BlobStore } from '../store/blob-store';
import type { BlobRef } from '../domain/types';
import { decodeCheckpoint } from '../model/checkpoint';
import { writeDirWhole, writeHfDir } from '../model/hf-dir';
import { readHfManifest } from '../model/hf-checkpoint';
import type { TextTokenizer } from '../model/tokenizer-types';
import { loraModelName } from './vllm-weights';

export type ServedWeights =
  | { kind: 'full'; dir: string }
  /** A LoRA policy: the base (labelled with its content address on the server) and the adapter under its name. */
  | { kind: 'lora'; baseDir: string; baseLabel: string; adapterDir: string; name: string };

/** A run id as one directory name (ids may hold '/', as child workflow ids do). */
function safeDirName(runId: string): string {
  return encodeURIComponent(runId);
}

async function writeFiles(store: BlobStore, files: Record<string, BlobRef>, dir: string, once = false): Promise<string> {
  if (once && fs.existsSync(dir)) return dir;
  const contents = await Promise.all(Object.entries(files).map(async ([name, ref]) => [name, await store.get(ref)] as const));
  return writeDirWhole(dir, (tmp) => {
    for (const [name, bytes] of contents) fs.writeFileSync(path.join(tmp, name), bytes);
  });
}

export async function writeServedWeights(
  store: BlobStore,
  o: { runId: string; weights: WeightsInfo; checkpoint: CheckpointInfo; root: string; model: string; tokenizer: TextTokenizer },
): Promise<ServedWeights> {
  const versionDir = path.join(o.root, safeDirName(o.runId), `v${o.weights.version}`);
  if (!o.weights.hf) {
    const ckpt = decodeCheckpoint(await store.get(o.checkpoint.ref));
    const meta = { run_id: o.runId, step: String(ckpt.step), weight_version: String(o.weights.version) };
    return { kind: 'full', dir: writeHfDir(versionDir, { config: ckpt.config, weights: ckpt.weights, tokenizer: o.tokenizer, meta }) };
  }
  const m = await readHfManifest(store, o.weights.hf);
  if (!m.adapter) return { kind: 'full', dir: await writeFiles(store, m.files, versionDir) };
  // The base is named after its files' content: every version of a run (and every run from the same
  // start) shares one directory and one label.
  const base = sha256Hex(new TextEncoder().encode(JSON.stringify(Object.entries(m.files).sort(([a], [b]) => a.localeCompare(b))))).slice(0, 16);
  return {
    kind: 'lora',
    baseDir: await writeFiles(store, m.files, path.join(o.root, 'lora-bases', base), true),
    baseLabel: `base-${base}`,
    adapterDir: await writeFiles(store, m.adapter, `${versionDir}-lora`),
    name: loraModelName(o.model, o.weights.hf.sha256),
  };
}
