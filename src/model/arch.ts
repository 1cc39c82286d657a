/**
 * Architecture of the embedded policy: a small pre-LayerNorm decoder-only transformer.
 * tfjs training code (gpt.ts) and the ONNX exporter (onnx-export.ts) both follow this file,
 * so the two implementations cannot drift apart in naming or shapes.
 *
 * Forward pass for input ids x[b, s] and position ids p[b, s]:
 *   h = oneHot(x) · wte + oneHot(p) · wpe            (oneHot·W, not gather: tfjs-wasm lacks UnsortedSegmentSum)
 *   for each layer i:
 *     a = LN(h; h.i.ln1)
 *     q,k,v = a·Wq+bq, a·Wk+bk, a·Wv+bv  -> split into nHeads of headDim
 *     att = softmax(q·kᵀ / sqrt(headDim) + mask)     mask: -1e9 where key is in the future or padded
 *     h = h + concat(att·v)·Wo + bo
 *     m = LN(h; h.i.ln2)
 *     h = h + gelu_tanh(m·W1 + b1)·W2 + b2
 *   logits = LN(h; lnf)·head                          (no output bias: GPT2LMHeadModel's lm_head has none)
 * LayerNorm eps = 1e-5. gelu_tanh(x) = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))).
 * Matrices are stored [in, out] so x·W is ONNX MatMul's layout. This is GPT-2 with an untied output
 * head; src/model/hf-export.ts maps it to GPT2LMHeadModel's names one for one.
 */

export interface GptConfig {
  vocabSize: number;
  /** Longest sequence (prompt + generated) the position table covers. */
  maxSeq: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  /** Hidden width of the MLP; 4·dModel by convention. */
  dFf: number;
  /**
   * Engine configs of exported Qwen3 / Llama policies (src/model/llama-onnx.ts) carry their
   * architecture and head size (which need not be dModel / nHeads there); the embedded policy's
   * GPT-2 has neither.
   */
  arch?: 'qwen3' | 'llama';
  headDim?: number;
}

export const LAYER_NORM_EPS = 1e-5;
/** Additive mask value; finite so fully masked (padding) rows stay NaN-free. */
export const MASK_VALUE = -1e9;

export function headDim(cfg: GptConfig): number {
  if (cfg.headDim !== undefined) return cfg.headDim;
  if (cfg.dModel % cfg.nHeads !== 0) {
    throw new RangeError(`dModel ${cfg.dModel} is not divisible by nHeads ${cfg.nHeads}`);
  }
  return cfg.dModel / cfg.nHeads;
}

/** Every parameter of the model with its shape, in a fixed order (the checkpoint order). */
export function weightShapes(cfg: GptConfig): Array<[name: string, shape: number[]]> {
  const d = cfg.dModel;
  const out: Array<[string, number[]]> = [
    ['wte', [cfg.vocabSize, d]],
    ['wpe', [cfg.maxSeq, d]],
  ];
  for (let i = 0; i < cfg.nLayers; i++) {
    const p = `h.${i}.`;
    out.push(
      [`${p}ln1.g`, [d]], [`${p}ln1.b`, [d]],
      [`${p}attn.wq`, [d, d]], [`${p}attn.bq`, [d]],
      [`${p}attn.wk`, [d, d]], [`${p}attn.bk`, [d]],
      [`${p}attn.wv`, [d, d]], [`${p}attn.bv`, [d]],
      [`${p}attn.wo`, [d, d]], [`${p}attn.bo`, [d]],
      [`${p}ln2.g`, [d]], [`${p}ln2.b`, [d]],
      [`${p}mlp.w1`, [d, cfg.dFf]], [`${p}mlp.b1`, [cfg.dFf]],
      [`${p}mlp.w2`, [cfg.dFf, d]], [`${p}mlp.b2`, [d]],
    );
  }
  out.push(['lnf.g', [d]], ['lnf.b', [d]], ['head', [d, cfg.vocabSize]]);
  return out;
}

/** Plain weights: name -> row-major Float32Array matching weightShapes. */
export type WeightMap = Record<string, Float32Array>;
