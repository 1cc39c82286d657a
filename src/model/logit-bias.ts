import { type GptConfig, type WeightMap } from './arch';

/**
 * Shifts the logits of the given tokens by fixed amounts, for tests and benches that need a random
 * policy to avoid (or prefer) a token such as EOS. The architecture has no output bias (GPT-2's
 * lm_head has none), so channel 0 of the final LayerNorm is made a constant 1 (gain 0, bias 1) and
 * the head's row 0 carries the shifts: logit[t] = … + head[0, t]. Returns new weights; the input is
 * left as it was.
 */
export function withLogitBias(cfg: GptConfig, weights: WeightMap, shifts: Record<number, number>): WeightMap {
  const out: WeightMap = { ...weights };
  const g = new Float32Array(weights['lnf.g'] as Float32Array);
  const b = new Float32Array(weights['lnf.b'] as Float32Array);
  const head = new Float32Array(weights.head as Float32Array);
  g[0] = 0;
  b[0] = 1;
  // Row 0 of head ([d, V], row-major) is what channel 0 adds to every logit.
  head.fill(0, 0, cfg.vocabSize);
  for (const [token, shift] of Object.entries(shifts)) head[Number(token)] = shift;
  out['lnf.g'] = g;
  out['lnf.b'] = b;
  out.head = head;
  return out;
}
