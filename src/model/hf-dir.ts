/** Hugging Face model directories on disk: written whole or not at all, read with clear errors. */
import fs from 'node:fs';
import path from 'node:path';
import type { GptConfig, WeightMap } from './arch';
import { exportHf, HF_FILE_NAMES, HfFormatError, importHf } from './hf-export';
import { DEFAULT_TOKENIZER_PATH } from './tokenizer';
import type { TextTokenizer } from './tokenizer-types';
import { REPO_ROOT } from '../paths';

/** The text of a tokenizer.json (default: the project's), copied byte for byte into exports. */
export function tokenizerJsonText(file: string = DEFAULT_TOKENIZER_PATH): string {
  return fs.readFileSync(path.resolve(REPO_ROOT, file), 'utf8');
}

export interface WriteHfDirInput {
  config: GptConfig;
  weights: WeightMap;
  tokenizer: TextTokenizer;
  /** tokenizer.json's text; default the project's file. */
  tokenizerJson?: string;
  meta?: Record<string, string>;
}

/**
 * Writes the export into `dir` (created), through a sibling temporary directory renamed into place,
 * so a server never reads half a checkpoint. An existing complete directory is replaced. Returns dir.
 */
export function writeHfDir(dir: string, input: WriteHfDirInput): string {
  const files = exportHf({
    config: input.config,
    weights: input.weights,
    tokenizerJson: input.tokenizerJson ?? tokenizerJsonText(),
    eosId: input.tokenizer.eosId,
    padId: input.tokenizer.padId,
    ...(input.meta ? { meta: input.meta } : {}),
  });
  return writeDirWhole(dir, (tmp) => {
    for (const name of HF_FILE_NAMES) fs.writeFileSync(path.join(tmp, name), files[name]);
  });
}

/**
 * Fills `dir` through a sibling temporary directory renamed into place, so a reader (a server
 * loading weights) never sees half of it; an existing `dir` is replaced. Returns dir.
 */
export function writeDirWhole(dir: string, fill: (tmp: string) => void): string {
  const parent = path.dirname(path.resolve(dir));
  fs.mkdirSync(parent, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(parent, `.${path.basename(dir)}.tmp-`));
  try {
    fill(tmp);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(tmp, dir);
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
  return dir;
}

/** Config, weights and tokenizer.json text of a directory; HfFormatError names the missing or bad file. */
export function readHfDir(dir: string): { config: GptConfig; weights: WeightMap; tokenizerJson: string } {
  const read = (name: string): Buffer => {
    const file = path.join(dir, name);
    if (!fs.existsSync(file)) throw new HfFormatError(`${dir} has no ${name} (a Hugging Face model directory, e.g. from npm run export:hf)`);
    return fs.readFileSync(file);
  };
  const { config, weights } = importHf(read('config.json').toString('utf8'), new Uint8Array(read('model.safetensors')));
  return { config, weights, tokenizerJson: read('tokenizer.json').toString('utf8') };
}
