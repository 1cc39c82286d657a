import { type GptConfig, type WeightMap, weightShapes } from './arch';
import { fillNormal, mulberry32 } from '../domain/rng';

const INIT_STD = 0.02;

/**
 * GPT-2 style initialisation as plain arrays (no tfjs), so the same seed gives the same
 * weights on every backend and the ONNX exporter can be tested without tfjs.
 */
export function initWeights(cfg: GptConfig, seed: number): WeightMap {
  const rand = mulberry32(seed);
  // Residual branches add up over 2·nLayers projections; scaling keeps the stream's variance flat.
  const residualStd = INIT_STD / Math.sqrt(2 * cfg.nLayers);
  const out: WeightMap = {};
  for (const [name, shape] of weightShapes(cfg)) {
    const size = shape.reduce((a, b) => a * b, 1);
    const w = new Float32Array(size);
    if (shape.length >= 2) {
      const residual = name.endsWith('attn.wo') || name.endsWith('mlp.w2');
      fillNormal(w, residual ? residualStd : INIT_STD, rand);
    } else if (name.endsWith('.g')) {
      w.fill(1);
    }
    out[name] = w;
  }
  return out;
}

/** Total number of scalar parameters. */
export function parameterCount(cfg: GptConfig): number {
  return weightShapes(cfg).reduce((n, [, s]) => n + s.reduce((a, b) => a * b, 1), 0);
}
