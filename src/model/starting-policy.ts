/**
 * Whether a starting policy fits a run: a Hugging Face directory (init.fromHf) must load as the
 * embedded policy, be encoded with the project's tokenizer and have the run's shape (model.*); an
 * earlier run's checkpoint (init.fromRun) must have that shape too. One check for the main job,
 * which refuses the config before the workflow starts (src/config/start-checks.ts), and for the
 * training activity, which keeps the refusal (a worker may see another filesystem).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GptConfig, WeightMap } from './arch';
import { readHfDir } from './hf-dir';
import { HfFormatError } from './hf-export';
import { loadTokenizer, tokenizerFromJson } from './tokenizer';

/** A starting policy the run cannot use; the message says why (the caller names the config key). */
export class StartingPolicyError extends Error {
  override readonly name = 'StartingPolicyError';
}

/** The keys of model.* that shape the embedded GPT-2 policy (model.arch and nKvHeads are the torch trainer's). */
const SHAPE_KEYS = ['dModel', 'nLayers', 'nHeads', 'dFf', 'maxSeq'] as const;
/** model.* of a run config as far as the embedded policy goes: its shape without the vocabulary, which the tokenizer fixes. */
export type PolicyShape = Pick<GptConfig, (typeof SHAPE_KEYS)[number]>;

/** A text with every kind of token the protocol uses: two tokenizers that agree on it agree on the run's text. */
const TOKENIZER_CHECK = 'Compute: 17+25*3-(8/2)\nACT 1: 17+25\nRESULT 1: 42\nANSWER: 71\n<calc>17+25</calc>\n<result>42</result>\n<|eos|>';

/** Throws StartingPolicyError naming every model.* key where `found` (in `where`) differs from the run's `model`. */
export function refuseOtherShape(model: PolicyShape, found: PolicyShape, where: string): void {
  const mismatch = SHAPE_KEYS.filter((k) => found[k] !== model[k]);
  if (mismatch.length === 0) return;
  throw new StartingPolicyError(mismatch.map((k) => `model.${k} is ${model[k]} here but ${found[k]} in ${where}`).join('; '));
}

/** The policy in Hugging Face directory `dir`, or StartingPolicyError saying why it cannot start a run of shape `model`. */
export function readHfStartingPolicy(dir: string, model: PolicyShape): { config: GptConfig; weights: WeightMap } {
  let imported: ReturnType<typeof readHfDir>;
  try {
    imported = readHfDir(dir);
  } catch (err) {
    if (err instanceof HfFormatError) throw new StartingPolicyError(err.message);
    throw err;
  }
  const tok = loadTokenizer();
  let theirs: string;
  try {
    theirs = tokenizerFromJson(JSON.parse(imported.tokenizerJson) as object).encode(TOKENIZER_CHECK).join();
  } catch {
    theirs = '';
  }
  if (theirs !== tok.encode(TOKENIZER_CHECK).join() || imported.config.vocabSize !== tok.vocabSize) {
    throw new StartingPolicyError(`${dir}/tokenizer.json is not the project's tokenizer (assets/tokenizer.json), which the run's prompts and demonstrations are encoded with`);
  }
  refuseOtherShape(model, imported.config, dir);
  return { config: imported.config, weights: imported.weights };
}

/** StartingPolicyError unless `dir` holds a Hugging Face config.json whose model_type is `arch`. */
export function checkHfArchitecture(dir: string, arch: string): void {
  const file = path.join(dir, 'config.json');
  let raw: { model_type?: unknown };
  try {
    raw = JSON.parse(fs.readFileSync(file, 'utf8')) as { model_type?: unknown };
  } catch (err) {
    throw new StartingPolicyError(`${file} cannot be read as JSON (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (raw.model_type !== arch) throw new StartingPolicyError(`${file} says model_type ${JSON.stringify(raw.model_type)}, and model.arch is ${arch}`);
}
