/**
 * A LoRA adapter (peft's directory: adapter_config.json, adapter_model.safetensors) merged into its
 * base's weights, so the embedded engine serves what the torch trainer's LoRA policy computes:
 *   W' = W + s · B·A        (Linear, weight [out, in]; GPT-2's Conv1D, fan_in_fan_out: W' = W + s · (B·A)ᵀ)
 * with s = lora_alpha / r (rsLoRA: lora_alpha / √r), as peft's merge_and_unload does. Settings this
 * merge does not compute (DoRA, per-module rank or alpha patterns, adapted biases, extra trained
 * modules) are refused by name.
 */
import { HfFormatError } from './hf-export';
import type { NamedTensor } from './safetensors';

interface AdapterConfig {
  peft_type?: string;
  r?: number;
  lora_alpha?: number;
  use_rslora?: boolean;
  use_dora?: boolean;
  fan_in_fan_out?: boolean;
  rank_pattern?: Record<string, unknown>;
  alpha_pattern?: Record<string, unknown>;
  modules_to_save?: unknown;
  lora_bias?: boolean;
  bias?: string;
}

const PREFIX = 'base_model.model.';

/** The base's tensors with the adapter's products added; the base's map is not changed. */
export function mergeLora(base: ReadonlyMap<string, NamedTensor>, adapterConfigJson: string, adapter: ReadonlyMap<string, NamedTensor>): Map<string, NamedTensor> {
  const c = JSON.parse(adapterConfigJson) as AdapterConfig;
  const refuse = (key: string, why: string): never => {
    throw new HfFormatError(`adapter_config.json: ${key} ${why}; the embedded engine merges plain LoRA only`);
  };
  if (c.peft_type !== 'LORA') refuse('peft_type', `is ${JSON.stringify(c.peft_type)}`);
  if (c.use_dora) refuse('use_dora', 'is true');
  if (c.lora_bias || (c.bias && c.bias !== 'none')) refuse('bias', 'adapts biases');
  if (c.modules_to_save) refuse('modules_to_save', 'trains whole modules');
  for (const key of ['rank_pattern', 'alpha_pattern'] as const) if (c[key] && Object.keys(c[key]).length > 0) refuse(key, 'sets per-module values');
  const r = c.r ?? 0;
  const alpha = c.lora_alpha ?? 0;
  if (!(r > 0) || !(alpha > 0)) refuse('r', `and lora_alpha must be positive (got ${r}, ${alpha})`);
  const scale = c.use_rslora ? alpha / Math.sqrt(r) : alpha / r;
  const out = new Map(base);
  for (const [name, a] of adapter) {
    if (!name.endsWith('.lora_A.weight')) continue;
    const module = name.slice(name.startsWith(PREFIX) ? PREFIX.length : 0, -'.lora_A.weight'.length);
    const b = adapter.get(name.replace('.lora_A.weight', '.lora_B.weight'));
    const w = base.get(`${module}.weight`);
    if (!b) throw new HfFormatError(`adapter_model.safetensors has ${name} without its lora_B`);
    if (!w) throw new HfFormatError(`adapter_model.safetensors adapts ${module}, which the base has no weight of`);
    const [rank, inDim] = a.shape as [number, number];
    const [outDim] = b.shape as [number, number];
    const transposed = c.fan_in_fan_out === true;
    const [rows, cols] = w.shape as [number, number];
    if (rank !== r || b.shape[1] !== r || (transposed ? rows !== inDim || cols !== outDim : rows !== outDim || cols !== inDim)) {
      throw new HfFormatError(`adapter_model.safetensors: ${module}'s A ${JSON.stringify(a.shape)} and B ${JSON.stringify(b.shape)} do not fit its weight ${JSON.stringify(w.shape)} at rank ${r}`);
    }
    const merged = Float32Array.from(w.data);
    for (let o = 0; o < outDim; o++) {
      for (let k = 0; k < rank; k++) {
        const bok = scale * (b.data[o * rank + k] as number);
        if (bok === 0) continue;
        const aRow = k * inDim;
        for (let i = 0; i < inDim; i++) merged[transposed ? i * outDim + o : o * inDim + i]! += bok * (a.data[aRow + i] as number);
      }
    }
    out.set(`${module}.weight`, { shape: w.shape, data: merged });
  }
  return out;
}
