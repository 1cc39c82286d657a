/**
 * assets/hf holds the non-weight files of an exported Hugging Face directory (tokenizer_config.json with
 * the Plan/Act chat template, generation_config.json) for the torch trainer, which writes them into
 * its checkpoints (python/durable_rl_torch/models.py, adding model_max_length). They must stay what
 * src/model/hf-export.ts writes; if this fails after a change there, rewrite them from exportHf's output.
 */
import fs from 'node:fs';
import path from 'node:path';
import { weightShapes, type WeightMap } from '../../src/model/arch';
import { exportHf } from '../../src/model/hf-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';

test('assets/hf holds the tokenizer_config.json and generation_config.json the TypeScript export writes', () => {
  const tok = loadTokenizer();
  const config = { vocabSize: tok.vocabSize, maxSeq: 16, dModel: 8, nLayers: 1, nHeads: 1, dFf: 8 };
  const weights: WeightMap = Object.fromEntries(weightShapes(config).map(([n, s]) => [n, new Float32Array(s.reduce((a, b) => a * b, 1))]));
  const files = exportHf({ config, weights, tokenizerJson: '{}', eosId: tok.eosId, padId: tok.padId });
  const read = (name: string): string => fs.readFileSync(path.join(REPO_ROOT, 'assets', 'hf', name), 'utf8');
  const { model_max_length: maxLength, ...tokenizerConfig } = JSON.parse(files['tokenizer_config.json']) as Record<string, unknown>;
  expect(maxLength).toBe(16);
  expect(JSON.parse(read('tokenizer_config.json'))).toEqual(tokenizerConfig);
  expect(read('generation_config.json')).toBe(files['generation_config.json']);
});
