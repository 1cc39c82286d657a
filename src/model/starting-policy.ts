/**
 * Whether a starting policy fits a run: a Hugging Face directory (init.fromHf) must load as the
 * embedded policy, be encoded with the project's tokenizer and have the run's shape (model.*); an
 * earlier run's checkpoint (init.fromRun) must have that shape too. One check for the main job,
 * which refuses the config before the workflow starts (src/config/start-checks.ts), and for the
 * training activity, which keeps the refusal (a worker may see another filesystem).
 */
import type { GptConfig, WeightMap } from './arch';
import { readHfDir } from './hf-dir';
import { HfFormatError } from './hf-export';
import { loadTokenizer, tokenizerFromJson } from './tokenizer';

/** A starting policy the run cannot use; the message says why (the caller names the config key). */
export class StartingPolicyError extends Error {
  override readonly name = 'StartingPolicyError';
}

/** model.* of a run config: the policy's shape without the vocabulary, which the tokenizer fixes. */
export type PolicyShape = Omit<GptConfig, 'vocabSize'>;

/** A text with every kind of token the protocol uses: two tokenizers that agree on it agree on the run's text. */
const TOKENIZER_CHECK = 'Compute: 17+25*3-(8/2)\nACT 1: 17+25\nRESULT 1: 42\nANSWER: 71\n<calc>17+25</calc>\n<result>42</result>\n<|eos|>';

/** Throws StartingPolicyError naming every model.* key where `found` (in `where`) differs from the run's `model`. */
export function refuseOtherShape(model: PolicyShape, found: PolicyShape, where: string): void {
  const mismatch = (Object.keys(model) as Array<keyof PolicyShape>).filter((k) => found[k] !== model[k]);
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
