import fs from 'node:fs';
import path from 'node:path';
import type { GptConfig } from './arch';
import { DEFAULT_TOKENIZER_PATH, loadTokenizer } from './tokenizer';
import { REPO_ROOT } from '../paths';

/** Used only while no tokenizer has been trained yet (fresh checkout). */
export const FALLBACK_VOCAB_SIZE = 512;

/** The embedded policy's shape apart from the vocabulary, which the tokenizer decides. */
export const DEFAULT_MODEL_SHAPE: Omit<GptConfig, 'vocabSize'> = {
  maxSeq: 384,
  dModel: 128,
  nLayers: 2,
  nHeads: 4,
  dFf: 512,
};

/**
 * Vocabulary of the shipped tokenizer when assets/tokenizer.json exists. A present but broken
 * file throws instead of silently falling back, so a model never gets a vocabulary that
 * disagrees with the tokenizer.
 */
export function shippedVocabSize(): number {
  const file = path.resolve(REPO_ROOT, DEFAULT_TOKENIZER_PATH);
  return fs.existsSync(file) ? loadTokenizer().vocabSize : FALLBACK_VOCAB_SIZE;
}

export const DEFAULT_GPT_CONFIG: GptConfig = { vocabSize: shippedVocabSize(), ...DEFAULT_MODEL_SHAPE };
