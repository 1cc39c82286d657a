/** trainer.* and model.arch: what only the torch trainer or vLLM can do is refused by name elsewhere. */
import { parseRunConfig } from '../../src/config/parse';
import { problemsOf } from '../helpers/config';

const synced = { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8011/v1', model: 'policy', weightSync: { dir: '.data/vllm-weights' } } };

describe('trainer and architecture keys', () => {
  it('leaves a config without them as it was (no trainer section, no arch)', () => {
    const cfg = parseRunConfig({});
    expect(cfg.trainer).toBeUndefined();
    expect(cfg.model).toEqual({ dModel: 128, nLayers: 2, nHeads: 4, dFf: 512, maxSeq: 384 });
  });

  it('takes a qwen3 policy on the embedded engine, with any rollout kind', () => {
    expect(parseRunConfig({ trainer: { backend: 'torch' }, model: { arch: 'qwen3' }, rollout: { kind: 'tree' }, rl: { groupSize: 4 } }).model.arch).toBe('qwen3');
  });

  it('takes the torch backend with its settings, and a qwen3 policy on a synced vLLM', () => {
    const cfg = parseRunConfig({ trainer: { backend: 'torch', lora: { rank: 8 } }, model: { arch: 'qwen3', dModel: 128, nHeads: 4, nKvHeads: 2 }, inference: synced });
    expect(cfg.trainer).toEqual({ backend: 'torch', device: 'auto', dtype: 'auto', gradientCheckpointing: false, lora: { rank: 8, alpha: 32, dropout: 0, targetModules: ['all-linear'] } });
    expect(cfg.model.nKvHeads).toBe(2);
  });

  it.each([
    [{ trainer: { lora: {} } }, 'trainer.lora', /torch trainer, and trainer\.backend is tfjs/],
    [{ trainer: { backend: 'tfjs', dtype: 'bfloat16' } }, 'trainer.dtype', /torch trainer/],
    [{ trainer: { gradientCheckpointing: true } }, 'trainer.gradientCheckpointing', /torch trainer/],
    [{ trainer: { backend: 'torch', lora: {} }, model: { arch: 'qwen3' }, inference: { engine: 'embedded' } }, 'trainer.lora', /served by vLLM/],
    [{ trainer: { backend: 'torch', lora: {} }, inference: synced }, 'trainer.lora', /not GPT-2's/],
    [{ model: { arch: 'llama' }, inference: synced }, 'model.arch', /needs trainer\.backend: torch/],
    [{ model: { nKvHeads: 2 } }, 'model.nKvHeads', /qwen3 or llama setting/],
    [{ model: { arch: 'qwen3', nHeads: 4, nKvHeads: 3 }, trainer: { backend: 'torch' }, inference: synced }, 'model.nKvHeads', /multiple of nKvHeads/],
    [{ trainer: { backend: 'jax' } }, 'trainer.backend', /./],
  ])('refuses %j, naming %s', (raw, field, message) => {
    expect(problemsOf(() => parseRunConfig(raw))).toEqual(expect.arrayContaining([expect.objectContaining({ path: field, message: expect.stringMatching(message) })]));
  });
});
