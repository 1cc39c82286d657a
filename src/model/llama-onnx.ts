/**
 * Qwen3 and Llama policies (model.arch qwen3 / llama, trained by the torch worker) for the embedded
 * engine: a Hugging Face Qwen3ForCausalLM / LlamaForCausalLM checkpoint as an ONNX decoder with the
 * same inputs, outputs and KV-cache layout as the GPT-2 export (src/model/onnx-export.ts), so the
 * engine, its batcher and its caches run it unchanged.
 *
 * Per layer, as transformers computes it (models/qwen3/modeling_qwen3.py):
 *   x = RMSNorm(h); q, k, v = x·Wqᵀ, x·Wkᵀ, x·Wvᵀ (no bias)
 *   qwen3: q, k = RMSNorm over each head (q_norm, k_norm)
 *   q, k = rotary(q, k, position)      cos/sin of position·θ^(-2i/hd), rotate_half halves
 *   k, v repeated to every query head (grouped-query attention: head h reads kv head h / (H/KVH))
 *   h = h + attention(q, k, v)·Woᵀ     causal, 1/sqrt(hd)
 *   h = h + (silu(RMSNorm(h)·Wgᵀ) * (RMSNorm(h)·Wuᵀ))·Wdᵀ
 *   logits = RMSNorm(h)·lm_headᵀ
 * The cache keeps every query head's k, v (the repeated ones): the engine's [rows, H, T, hd] layout.
 */
import { ELEM, GraphBuilder } from './onnx-builder';
import { HfFormatError } from './hf-export';
import type { GptConfig } from './arch';
import type { NamedTensor } from './safetensors';
import { decoderModel, ONNX_IO } from './onnx-export';

export interface LlamaConfig {
  arch: 'qwen3' | 'llama';
  vocabSize: number;
  maxSeq: number;
  dModel: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  dFf: number;
  ropeTheta: number;
  rmsEps: number;
  tieWordEmbeddings: boolean;
}

/** config.json of a Qwen3ForCausalLM or LlamaForCausalLM directory, checked for what this export computes. */
export function readLlamaConfig(raw: Record<string, unknown>): LlamaConfig {
  const bad = (name: string, why: string): never => {
    throw new HfFormatError(`config.json: ${name} ${why}`);
  };
  const arch = raw.model_type;
  if (arch !== 'qwen3' && arch !== 'llama') bad('model_type', `is ${JSON.stringify(arch)}; the Llama-family export reads qwen3 and llama`);
  const int = (name: string, fallback?: number): number => {
    const v = raw[name] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) return bad(name, `must be a positive integer (got ${JSON.stringify(v)})`);
    return v;
  };
  const act = raw.hidden_act ?? 'silu';
  if (act !== 'silu') bad('hidden_act', `is ${JSON.stringify(act)}; the export computes SwiGLU with silu`);
  if (raw.attention_bias === true || raw.mlp_bias === true) bad(raw.attention_bias === true ? 'attention_bias' : 'mlp_bias', 'is true; the export has no projection biases');
  const scaling = (raw.rope_scaling ?? null) as Record<string, unknown> | null;
  if (scaling && scaling.rope_type !== 'default' && scaling.type !== 'default') bad('rope_scaling', `is ${JSON.stringify(scaling)}; the export computes the default rotary embedding`);
  const ropeParams = raw.rope_parameters as Record<string, unknown> | undefined;
  if (ropeParams && ropeParams.rope_type !== undefined && ropeParams.rope_type !== 'default') bad('rope_parameters', `is ${JSON.stringify(ropeParams)}; the export computes the default rotary embedding`);
  const theta = Number(ropeParams?.rope_theta ?? raw.rope_theta ?? 10000);
  const nHeads = int('num_attention_heads');
  const dModel = int('hidden_size');
  const nKvHeads = int('num_key_value_heads', nHeads);
  if (nHeads % nKvHeads !== 0) bad('num_key_value_heads', `(${nKvHeads}) must divide num_attention_heads (${nHeads})`);
  return {
    arch: arch as 'qwen3' | 'llama',
    vocabSize: int('vocab_size'),
    maxSeq: int('max_position_embeddings'),
    dModel,
    nLayers: int('num_hidden_layers'),
    nHeads,
    nKvHeads,
    headDim: int('head_dim', dModel / nHeads),
    dFf: int('intermediate_size'),
    ropeTheta: theta,
    rmsEps: Number(raw.rms_norm_eps ?? 1e-6),
    tieWordEmbeddings: raw.tie_word_embeddings === true,
  };
}

/** The engine's view of the decoder: its cache holds H heads of headDim. */
export function engineConfig(c: LlamaConfig): GptConfig {
  return { vocabSize: c.vocabSize, maxSeq: c.maxSeq, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, dFf: c.dFf, arch: c.arch, headDim: c.headDim };
}

/**
 * cos and sin of every position's rotary angles, [maxSeq, hd/2], computed in float32 step by step as
 * transformers does (inv_freq, then position · inv_freq, then cos and sin), so the angles of late
 * positions round as the trainer's do.
 */
function rotaryTables(c: LlamaConfig): { cos: Float32Array; sin: Float32Array } {
  const half = c.headDim / 2;
  const f = Math.fround;
  const inv = Array.from({ length: half }, (_, i) => f(1 / f(Math.pow(c.ropeTheta, f((2 * i) / c.headDim)))));
  const cos = new Float32Array(c.maxSeq * half);
  const sin = new Float32Array(c.maxSeq * half);
  for (let p = 0; p < c.maxSeq; p++) {
    for (let i = 0; i < half; i++) {
      const angle = f(p * (inv[i] as number));
      cos[p * half + i] = Math.cos(angle);
      sin[p * half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

export function exportLlamaOnnx(c: LlamaConfig, tensors: ReadonlyMap<string, NamedTensor>, metadata: Record<string, string> = {}): Uint8Array {
  const g = new GraphBuilder();
  const { nHeads: H, nKvHeads: KVH, headDim: hd, dModel: d } = c;
  const rep = H / KVH;
  const take = (name: string, shape: number[]): string => {
    const t = tensors.get(name);
    if (!t) throw new HfFormatError(`model.safetensors has no tensor ${name}`);
    if (JSON.stringify(t.shape) !== JSON.stringify(shape)) throw new HfFormatError(`model.safetensors: ${name} has shape ${JSON.stringify(t.shape)}, config.json implies ${JSON.stringify(shape)}`);
    return g.floatInit(name, shape, t.data);
  };
  const embed = take('model.embed_tokens.weight', [c.vocabSize, d]);
  const head = c.tieWordEmbeddings && !tensors.has('lm_head.weight') ? embed : take('lm_head.weight', [c.vocabSize, d]);
  const { cos, sin } = rotaryTables(c);
  g.floatInit('rope.cos', [c.maxSeq, hd / 2], cos);
  g.floatInit('rope.sin', [c.maxSeq, hd / 2], sin);
  const rows2d = g.int64Init('const.rows_d', [2], [-1, d]);
  const flatHeads = g.int64Init('const.flat_heads', [3], [0, 0, -1]);
  const kvGroups = g.int64Init('const.kv_groups', [5], [0, 0, KVH, 1, hd]);
  const lastAxis = g.int64Init('const.last_axis', [1], [-1]);
  const vocabTail = g.int64Init('const.vocab_tail', [1], [c.vocabSize]);
  const epsName = g.floatInit('const.rms_eps', [], Float32Array.of(c.rmsEps));

  const ids = g.input(ONNX_IO.inputIds, ELEM.INT64, ['batch', 'seq']);
  const am = g.input(ONNX_IO.attentionMask, ELEM.INT64, ['batch', 'total']);
  const pos = g.input(ONNX_IO.positionIds, ELEM.INT64, ['batch', 'seq']);
  const pastDims = ['batch', H, 'past', hd];
  const pastK: string[] = [];
  const pastV: string[] = [];
  for (let i = 0; i < c.nLayers; i++) {
    pastK.push(g.input(ONNX_IO.pastKey(i), ELEM.FLOAT, pastDims));
    pastV.push(g.input(ONNX_IO.pastValue(i), ELEM.FLOAT, pastDims));
  }
  const idsShape = g.op('Shape', [ids]);
  const bsShape = (tail: string) => g.op('Concat', [idsShape, tail], { axis: 0 });
  const keyPadding = g.op('Cast', [am], { to: ELEM.INT32 });

  /** transformers' RMSNorm over the last axis: x / sqrt(mean(x²) + eps) · weight. */
  const rms = (x: string, weight: string): string => {
    const variance = g.op('ReduceMean', [g.op('Mul', [x, x]), lastAxis], { keepdims: 1 });
    return g.op('Mul', [g.op('Mul', [x, g.op('Reciprocal', [g.op('Sqrt', [g.op('Add', [variance, epsName])])])]), weight]);
  };
  const linear = (x: string, weight: string): string => g.op('Gemm', [x, weight], { transB: 1 });

  // Rotary tables of each token's position, broadcast over heads: [b, s, 1, hd] (both halves).
  const angles = (table: string) => {
    const t = g.op('Gather', [table, pos], { axis: 0 });
    return g.op('Unsqueeze', [g.op('Concat', [t, t], { axis: -1 }), g.int64Init(`const.axis2_${table}`, [1], [2])]);
  };
  const cosT = angles('rope.cos');
  const sinT = angles('rope.sin');
  const rotate = (x: string): string => {
    const [x1, x2] = g.opN('Split', [x], 2, { axis: -1, num_outputs: 2 }) as [string, string];
    const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], { axis: -1 });
    return g.op('Add', [g.op('Mul', [x, cosT]), g.op('Mul', [rotated, sinT])]);
  };

  let h = g.op('Reshape', [g.op('Gather', [embed, ids], { axis: 0 }), rows2d]);
  for (let i = 0; i < c.nLayers; i++) {
    const P = `model.layers.${i}.`;
    const x = rms(h, take(`${P}input_layernorm.weight`, [d]));
    // [b·s, heads·hd] -> [b, s, heads, hd]
    const perHead = (y: string, heads: number) => g.op('Reshape', [y, bsShape(g.int64Init(`const.tail_${i}_${heads}_${y}`, [2], [heads, hd]))]);
    let q = perHead(linear(x, take(`${P}self_attn.q_proj.weight`, [H * hd, d])), H);
    let k = perHead(linear(x, take(`${P}self_attn.k_proj.weight`, [KVH * hd, d])), KVH);
    const v = perHead(linear(x, take(`${P}self_attn.v_proj.weight`, [KVH * hd, d])), KVH);
    if (c.arch === 'qwen3') {
      q = rms(q, take(`${P}self_attn.q_norm.weight`, [hd]));
      k = rms(k, take(`${P}self_attn.k_norm.weight`, [hd]));
    }
    q = rotate(q);
    k = rotate(k);
    // Every query head's k and v: kv head j serves query heads j·rep .. j·rep + rep - 1.
    const repeated = (y: string): string => {
      if (rep === 1) return g.op('Reshape', [y, flatHeads]);
      const grouped = g.op('Reshape', [y, kvGroups]);
      const expanded = g.op('Expand', [grouped, g.op('Concat', [idsShape, g.int64Init(`const.rep_${i}_${y}`, [3], [KVH, rep, hd])], { axis: 0 })]);
      return g.op('Reshape', [expanded, flatHeads]);
    };
    const [att] = g.opN(
      'MultiHeadAttention',
      [g.op('Reshape', [q, flatHeads]), repeated(k), repeated(v), '', keyPadding, '', pastK[i] as string, pastV[i] as string],
      3,
      { num_heads: H, unidirectional: 1, mask_filter_value: { float: -1e9 } },
      [`attn_${i}`, ONNX_IO.presentKey(i), ONNX_IO.presentValue(i)],
      'com.microsoft',
    ) as [string];
    const attnOut = linear(g.op('Reshape', [att, g.int64Init(`const.rows_att_${i}`, [2], [-1, H * hd])]), take(`${P}self_attn.o_proj.weight`, [d, H * hd]));
    h = g.op('Add', [h, attnOut]);
    const m = rms(h, take(`${P}post_attention_layernorm.weight`, [d]));
    const gate = linear(m, take(`${P}mlp.gate_proj.weight`, [c.dFf, d]));
    const up = linear(m, take(`${P}mlp.up_proj.weight`, [c.dFf, d]));
    const act = g.op('Mul', [g.op('Mul', [gate, g.op('Sigmoid', [gate])]), up]);
    h = g.op('Add', [h, linear(act, take(`${P}mlp.down_proj.weight`, [d, c.dFf]))]);
  }
  const out = rms(h, take('model.norm.weight', [d]));
  g.op('Reshape', [linear(out, head), bsShape(vocabTail)], {}, ONNX_IO.logits);

  return decoderModel(g, `durable_rl_${c.arch}`, engineConfig(c), metadata);
}
