import { onnx } from 'onnx-proto';
import { type GptConfig, type WeightMap, LAYER_NORM_EPS, MASK_VALUE, headDim, weightShapes } from './arch';
import { ELEM, GraphBuilder } from './onnx-builder';
import { concatColumns } from './matrix';

const OPSET = 20;
/** IR 9 is the first that allows opset 20; onnx-proto's enum stops at 8 but the field is a plain int. */
const IR_VERSION = 9;

/** Names of the decoder's inputs and outputs (the engine and the exporter share them). */
export const ONNX_IO = {
  inputIds: 'input_ids',
  attentionMask: 'attention_mask',
  positionIds: 'position_ids',
  pastKey: (i: number): string => `past_key_values.${i}.key`,
  pastValue: (i: number): string => `past_key_values.${i}.value`,
  logits: 'logits',
  presentKey: (i: number): string => `present.${i}.key`,
  presentValue: (i: number): string => `present.${i}.value`,
} as const;

/** metadata_props keys written by exportOnnx. */
export const ONNX_META = { config: 'gpt_config', weightVersion: 'weight_version' } as const;

/**
 * Exports the decoder (src/model/arch.ts) as an opset-20 ONNX model with KV-cache I/O.
 * A past length of 0 (empty past tensors) gives the full-sequence forward, so one graph
 * serves prefill, recomputation and cached decoding.
 *
 * Same math as gpt.ts, arranged for a fast single-token step, where onnxruntime's per-node
 * overhead dominates (a cached step of the default model is ~0.1 ms): the residual stream stays
 * 2-D [b·s, d] so every linear layer is one Gemm with its bias fused; Q, K, V come from one Gemm
 * on concatenated weights; attention (past concat, causal and padding masks, softmax) is one
 * com.microsoft.MultiHeadAttention node and each residual add + LayerNorm one
 * com.microsoft.SkipLayerNormalization, the contrib ops onnxruntime's own transformer optimizer
 * emits: 33 kernels per step instead of 66 with standard ops, which is what lifted the KV cache's
 * batch-1 lead over recomputation above 5x (bench/generate.ts). The opset-23 Attention op saved
 * under 10%.
 * `metadata.weight_version`, when given, identifies the weights; the config is always embedded.
 */
export function exportOnnx(cfg: GptConfig, weights: WeightMap, metadata: Record<string, string> = {}): Uint8Array {
  const g = new GraphBuilder();
  const H = cfg.nHeads;
  const hd = headDim(cfg);
  const d = cfg.dModel;

  const shapes = new Map(weightShapes(cfg));
  const w = (name: string): Float32Array => {
    const t = weights[name];
    const size = (shapes.get(name) ?? []).reduce((a, b) => a * b, 1);
    if (!t || t.length !== size) throw new Error(`exportOnnx: weight ${name} missing or not ${size} floats`);
    return t;
  };
  for (const name of ['wte', 'wpe', 'lnf.g', 'lnf.b', 'head']) g.floatInit(name, shapes.get(name) as number[], w(name));

  const rows2d = g.int64Init('const.rows_d', [2], [-1, d]);
  const qkvTail = g.int64Init('const.qkv_tail', [1], [3 * d]);
  const vocabTail = g.int64Init('const.vocab_tail', [1], [cfg.vocabSize]);

  const ids = g.input(ONNX_IO.inputIds, ELEM.INT64, ['batch', 'seq']);
  const am = g.input(ONNX_IO.attentionMask, ELEM.INT64, ['batch', 'total']);
  const pos = g.input(ONNX_IO.positionIds, ELEM.INT64, ['batch', 'seq']);
  const pastDims = ['batch', H, 'past', hd];
  const pastK: string[] = [];
  const pastV: string[] = [];
  for (let i = 0; i < cfg.nLayers; i++) {
    pastK.push(g.input(ONNX_IO.pastKey(i), ELEM.FLOAT, pastDims));
    pastV.push(g.input(ONNX_IO.pastValue(i), ELEM.FLOAT, pastDims));
  }

  // Gather here (not oneHot·W as in training): inference needs no gradient. h is [b·s, d].
  const emb = g.op('Add', [g.op('Gather', ['wte', ids], { axis: 0 }), g.op('Gather', ['wpe', pos], { axis: 0 })]);
  let h = g.op('Reshape', [emb, rows2d]);

  // Causal masking happens inside MultiHeadAttention (unidirectional); padding is a key mask.
  const idsShape = g.op('Shape', [ids]);
  const keyPadding = g.op('Cast', [am], { to: ELEM.INT32 });
  const qkvShape = g.op('Concat', [idsShape, qkvTail], { axis: 0 });

  const eps = { epsilon: { float: LAYER_NORM_EPS } };
  const gemm = (x: string, wName: string, bName: string): string => g.op('Gemm', [x, wName, bName]);
  /**
   * One kernel for `h + delta` and its LayerNorm (com.microsoft.SkipLayerNormalization):
   * returns [normalized, sum]; the sum is the new residual stream, left out where nothing reads it.
   */
  const addNorm = (h: string, delta: string, p: string, keepSum = true): [string, string] => {
    const outs = [`${p}.out`, '', '', keepSum ? `${p}.residual` : ''];
    const [normed, , , sum] = g.opN('SkipLayerNormalization', [h, delta, `${p}.g`, `${p}.b`], 4, eps, outs, 'com.microsoft');
    return [normed as string, sum as string];
  };

  // x is the LayerNorm-ed input of the next sublayer, h the residual stream it adds to.
  let x = g.op('LayerNormalization', [h, 'h.0.ln1.g', 'h.0.ln1.b'], { axis: -1, ...eps });
  for (let i = 0; i < cfg.nLayers; i++) {
    const L = `h.${i}.`;
    for (const name of ['ln1.g', 'ln1.b', 'attn.wo', 'attn.bo', 'ln2.g', 'ln2.b', 'mlp.w1', 'mlp.b1', 'mlp.w2', 'mlp.b2']) {
      g.floatInit(`${L}${name}`, shapes.get(`${L}${name}`) as number[], w(`${L}${name}`));
    }
    g.floatInit(`${L}attn.wqkv`, [d, 3 * d], concatColumns([w(`${L}attn.wq`), w(`${L}attn.wk`), w(`${L}attn.wv`)], d, d));
    g.floatInit(`${L}attn.bqkv`, [3 * d], concatColumns([w(`${L}attn.bq`), w(`${L}attn.bk`), w(`${L}attn.bv`)], 1, d));

    // [b·s, 3d] -> [b, s, 3d] -> q, k, v as [b, s, d]; MultiHeadAttention appends k, v to the
    // past ([b, H, past, hd]) as present, masks future and padded keys, and returns [b, s, d].
    const qkv = g.op('Reshape', [gemm(x, `${L}attn.wqkv`, `${L}attn.bqkv`), qkvShape]);
    const [q, kNew, vNew] = g.opN('Split', [qkv], 3, { axis: 2, num_outputs: 3 }) as [string, string, string];
    const [att] = g.opN(
      'MultiHeadAttention',
      [q, kNew, vNew, '', keyPadding, '', pastK[i] as string, pastV[i] as string],
      3,
      { num_heads: H, unidirectional: 1, mask_filter_value: { float: MASK_VALUE } },
      [`attn_${i}`, ONNX_IO.presentKey(i), ONNX_IO.presentValue(i)],
      'com.microsoft',
    ) as [string];
    [x, h] = addNorm(h, gemm(g.op('Reshape', [att, rows2d]), `${L}attn.wo`, `${L}attn.bo`), `${L}ln2`);

    const inner = g.op('Gelu', [gemm(x, `${L}mlp.w1`, `${L}mlp.b1`)], { approximate: 'tanh' });
    const last = i + 1 === cfg.nLayers;
    [x, h] = addNorm(h, gemm(inner, `${L}mlp.w2`, `${L}mlp.b2`), last ? 'lnf' : `h.${i + 1}.ln1`, !last);
  }
  const logitsShape = g.op('Concat', [idsShape, vocabTail], { axis: 0 });
  g.op('Reshape', [g.op('MatMul', [x, 'head']), logitsShape], {}, ONNX_IO.logits);

  return decoderModel(g, 'durable_rl_gpt', cfg, metadata);
}

/**
 * The decoder's outputs (logits and every layer's present k and v, in the engine's [b, H, T, hd]
 * layout) added to `g`, and the model encoded with `cfg` (the engine's view of it) and `metadata` in
 * its metadata_props: what every exporter of a decoder for the embedded engine ends with.
 */
export function decoderModel(g: GraphBuilder, name: string, cfg: GptConfig, metadata: Record<string, string>): Uint8Array {
  const H = cfg.nHeads;
  const hd = headDim(cfg);
  g.output(ONNX_IO.logits, ELEM.FLOAT, ['batch', 'seq', cfg.vocabSize]);
  for (let i = 0; i < cfg.nLayers; i++) {
    g.output(ONNX_IO.presentKey(i), ELEM.FLOAT, ['batch', H, 'total', hd]);
    g.output(ONNX_IO.presentValue(i), ELEM.FLOAT, ['batch', H, 'total', hd]);
  }
  const props: Record<string, string> = { ...metadata, [ONNX_META.config]: JSON.stringify(cfg) };
  const model: onnx.IModelProto = {
    irVersion: IR_VERSION,
    opsetImport: [
      { domain: '', version: OPSET },
      { domain: 'com.microsoft', version: 1 },
    ],
    producerName: 'durable-rl',
    graph: g.graph(name),
    metadataProps: Object.keys(props)
      .sort()
      .map((key) => ({ key, value: props[key] as string })),
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

/** Reads metadata_props back (ORT's node binding does not expose them). */
export function readOnnxMetadata(bytes: Uint8Array): Record<string, string> {
  const model = onnx.ModelProto.decode(bytes);
  const out: Record<string, string> = {};
  for (const p of model.metadataProps) if (p.key) out[p.key] = p.value ?? '';
  return out;
}
