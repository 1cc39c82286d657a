/**
 * The embedded policy as a Hugging Face causal-LM directory, and back. src/model/arch.ts is GPT-2
 * with an untied output head, so the export is `GPT2LMHeadModel` with its own names: one fused
 * c_attn [d, 3d] for q, k, v (GPT-2's Conv1D stores [in, out], as arch.ts does), gelu_new (the tanh
 * approximation), LayerNorm eps 1e-5, lm_head [V, d] = headᵀ. Both `transformers` and vLLM load the
 * directory; test/model/hf-export.test.ts checks transformers' logits against the ONNX engine's.
 */
import { type GptConfig, type WeightMap, LAYER_NORM_EPS, weightShapes } from './arch';
import { concatColumns, splitColumns, transpose } from './matrix';
import { decodeSafetensors, encodeSafetensors, type NamedTensor } from './safetensors';
import { EOS_TOKEN, PAD_TOKEN, TOKENIZER_CONFIG } from './tokenizer';
import { formatToolCall, formatToolResult } from '../planact/protocol';

/** The files of an exported directory, by name. */
export interface HfFiles {
  'config.json': string;
  'generation_config.json': string;
  'model.safetensors': Uint8Array;
  'tokenizer.json': string;
  'tokenizer_config.json': string;
}

export const HF_FILE_NAMES = ['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'] as const;

/** A bad or unsupported Hugging Face directory; the message names the file and field. */
export class HfFormatError extends Error {
  override name = 'HfFormatError';
}

/**
 * The Plan/Act protocol as a Jinja chat template (src/gateway/chat-template.ts renders the same
 * text): system and user messages verbatim, an assistant turn as the model wrote it (calculator
 * calls as <calc> text; a final answer closed by the end-of-turn token), a tool result as the
 * protocol's result block. Built from the protocol's own strings so the two cannot drift apart.
 */
export function chatTemplate(): string {
  const [callOpen, callClose] = formatToolCall('\u0000').split('\u0000') as [string, string];
  const [resultOpen, resultClose] = formatToolResult('\u0000').split('\u0000') as [string, string];
  const lit = (s: string): string => JSON.stringify(s);
  return [
    '{%- for message in messages -%}',
    "{%- if message['role'] == 'tool' -%}",
    `{{ ${lit(resultOpen)} + message['content'] + ${lit(resultClose)} }}`,
    "{%- elif message['role'] == 'assistant' -%}",
    "{%- if message['content'] -%}{{ message['content'] }}{%- endif -%}",
    "{%- if message['tool_calls'] -%}",
    "{%- for call in message['tool_calls'] -%}",
    "{%- set args = call['function']['arguments'] -%}",
    `{{ ${lit(callOpen)} + (args['expression'] if args is mapping else args) + ${lit(callClose)} }}`,
    '{%- endfor -%}',
    '{%- else -%}{{ eos_token }}{%- endif -%}',
    "{%- else -%}{{ message['content'] }}{%- endif -%}",
    '{%- endfor -%}',
  ].join('');
}

function hfConfig(cfg: GptConfig, eosId: number, padId: number, meta: Record<string, string>): Record<string, unknown> {
  return {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: cfg.vocabSize,
    n_positions: cfg.maxSeq,
    n_ctx: cfg.maxSeq,
    n_embd: cfg.dModel,
    n_layer: cfg.nLayers,
    n_head: cfg.nHeads,
    n_inner: cfg.dFf,
    activation_function: 'gelu_new',
    layer_norm_epsilon: LAYER_NORM_EPS,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    initializer_range: 0.02,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    tie_word_embeddings: false,
    bos_token_id: eosId,
    eos_token_id: eosId,
    pad_token_id: padId,
    torch_dtype: 'float32',
    use_cache: true,
    durable_rl: meta,
  };
}

/** Tensors in GPT2LMHeadModel's names. */
function hfTensors(cfg: GptConfig, w: WeightMap): Array<[string, NamedTensor]> {
  const d = cfg.dModel;
  const get = (name: string): Float32Array => {
    const t = w[name];
    if (!t) throw new Error(`hf export: weight ${name} missing`);
    return t;
  };
  const out: Array<[string, NamedTensor]> = [
    ['transformer.wte.weight', { shape: [cfg.vocabSize, d], data: get('wte') }],
    ['transformer.wpe.weight', { shape: [cfg.maxSeq, d], data: get('wpe') }],
  ];
  for (let i = 0; i < cfg.nLayers; i++) {
    const L = `h.${i}.`;
    const H = `transformer.h.${i}.`;
    out.push(
      [`${H}ln_1.weight`, { shape: [d], data: get(`${L}ln1.g`) }],
      [`${H}ln_1.bias`, { shape: [d], data: get(`${L}ln1.b`) }],
      [`${H}attn.c_attn.weight`, { shape: [d, 3 * d], data: concatColumns([get(`${L}attn.wq`), get(`${L}attn.wk`), get(`${L}attn.wv`)], d, d) }],
      [`${H}attn.c_attn.bias`, { shape: [3 * d], data: concatColumns([get(`${L}attn.bq`), get(`${L}attn.bk`), get(`${L}attn.bv`)], 1, d) }],
      [`${H}attn.c_proj.weight`, { shape: [d, d], data: get(`${L}attn.wo`) }],
      [`${H}attn.c_proj.bias`, { shape: [d], data: get(`${L}attn.bo`) }],
      [`${H}ln_2.weight`, { shape: [d], data: get(`${L}ln2.g`) }],
      [`${H}ln_2.bias`, { shape: [d], data: get(`${L}ln2.b`) }],
      [`${H}mlp.c_fc.weight`, { shape: [d, cfg.dFf], data: get(`${L}mlp.w1`) }],
      [`${H}mlp.c_fc.bias`, { shape: [cfg.dFf], data: get(`${L}mlp.b1`) }],
      [`${H}mlp.c_proj.weight`, { shape: [cfg.dFf, d], data: get(`${L}mlp.w2`) }],
      [`${H}mlp.c_proj.bias`, { shape: [d], data: get(`${L}mlp.b2`) }],
    );
  }
  out.push(
    ['transformer.ln_f.weight', { shape: [d], data: get('lnf.g') }],
    ['transformer.ln_f.bias', { shape: [d], data: get('lnf.b') }],
    ['lm_head.weight', { shape: [cfg.vocabSize, d], data: transpose(get('head'), d, cfg.vocabSize) }],
  );
  return out;
}

export interface HfExportInput {
  config: GptConfig;
  weights: WeightMap;
  /** The tokenizer.json the policy was trained with, as text (copied byte for byte). */
  tokenizerJson: string;
  eosId: number;
  padId: number;
  /** Written into config.json's durable_rl block and the safetensors metadata (run id, step, weight version). */
  meta?: Record<string, string>;
}

export function exportHf(input: HfExportInput): HfFiles {
  const { config: cfg, meta = {} } = input;
  const json = (x: unknown): string => `${JSON.stringify(x, null, 2)}\n`;
  return {
    'config.json': json(hfConfig(cfg, input.eosId, input.padId, meta)),
    // Neutral sampling: a server that fills unset parameters from here (vLLM's default
    // --generation-config auto) must sample the plain softmax the trainer's logprobs assume.
    'generation_config.json': json({
      bos_token_id: input.eosId,
      eos_token_id: input.eosId,
      pad_token_id: input.padId,
      do_sample: true,
      temperature: 1.0,
      top_p: 1.0,
      top_k: 0,
      min_p: 0.0,
      repetition_penalty: 1.0,
    }),
    'model.safetensors': encodeSafetensors(hfTensors(cfg, input.weights), { format: 'pt', ...meta }),
    'tokenizer.json': input.tokenizerJson,
    'tokenizer_config.json': json({
      ...TOKENIZER_CONFIG,
      eos_token: EOS_TOKEN,
      pad_token: PAD_TOKEN,
      bos_token: null,
      model_max_length: cfg.maxSeq,
      chat_template: chatTemplate(),
    }),
  };
}

/** What config.json must say for arch.ts to compute the same function. */
function readConfig(raw: Record<string, unknown>): GptConfig {
  const field = (name: string): unknown => raw[name];
  const bad = (name: string, why: string): never => {
    throw new HfFormatError(`config.json: ${name} ${why}`);
  };
  if (field('model_type') !== 'gpt2') bad('model_type', `is ${JSON.stringify(field('model_type'))}; only gpt2 (GPT2LMHeadModel) maps onto the embedded policy`);
  const act = field('activation_function') ?? 'gelu_new';
  if (act !== 'gelu_new' && act !== 'gelu_pytorch_tanh') bad('activation_function', `is ${JSON.stringify(act)}; the policy uses the tanh GELU (gelu_new)`);
  const eps = field('layer_norm_epsilon') ?? 1e-5;
  if (eps !== LAYER_NORM_EPS) bad('layer_norm_epsilon', `is ${String(eps)}; the policy's LayerNorm uses ${LAYER_NORM_EPS}`);
  for (const flag of ['scale_attn_by_inverse_layer_idx', 'reorder_and_upcast_attn'] as const) if (field(flag) === true) bad(flag, 'is true; the policy does not support it');
  if (field('scale_attn_weights') === false) bad('scale_attn_weights', 'is false; the policy scales attention by 1/sqrt(head dim)');
  const int = (name: string): number => {
    const v = field(name);
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) return bad(name, `must be a positive integer (got ${JSON.stringify(v)})`);
    return v;
  };
  const dModel = int('n_embd');
  const inner = field('n_inner');
  return {
    vocabSize: int('vocab_size'),
    maxSeq: int('n_positions'),
    dModel,
    nLayers: int('n_layer'),
    nHeads: int('n_head'),
    dFf: inner === null || inner === undefined ? 4 * dModel : int('n_inner'),
  };
}

/**
 * The policy's config and weights from an exported (or any GPT2LMHeadModel float32) directory's
 * config.json and model.safetensors. Names with or without the `transformer.` prefix are read; a
 * tied head (no lm_head.weight) is the embedding's transpose.
 */
export function importHf(configJson: string, safetensors: Uint8Array): { config: GptConfig; weights: WeightMap } {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(configJson) as Record<string, unknown>;
  } catch (err) {
    throw new HfFormatError(`config.json is not JSON (${(err as Error).message})`);
  }
  const cfg = readConfig(raw);
  let tensors: Map<string, NamedTensor>;
  try {
    tensors = decodeSafetensors(safetensors).tensors;
  } catch (err) {
    throw new HfFormatError(`model.safetensors: ${(err as Error).message.replace(/^safetensors: /, '')}`);
  }
  const d = cfg.dModel;
  const take = (name: string, shape: number[]): Float32Array => {
    const t = tensors.get(`transformer.${name}`) ?? tensors.get(name);
    if (!t) throw new HfFormatError(`model.safetensors has no tensor ${name}`);
    if (JSON.stringify(t.shape) !== JSON.stringify(shape)) throw new HfFormatError(`model.safetensors: ${name} has shape ${JSON.stringify(t.shape)}, config.json implies ${JSON.stringify(shape)}`);
    return t.data;
  };
  const w: WeightMap = { wte: take('wte.weight', [cfg.vocabSize, d]), wpe: take('wpe.weight', [cfg.maxSeq, d]) };
  for (let i = 0; i < cfg.nLayers; i++) {
    const L = `h.${i}.`;
    const [wq, wk, wv] = splitColumns(take(`${L}attn.c_attn.weight`, [d, 3 * d]), d, d, 3) as [Float32Array, Float32Array, Float32Array];
    const [bq, bk, bv] = splitColumns(take(`${L}attn.c_attn.bias`, [3 * d]), 1, d, 3) as [Float32Array, Float32Array, Float32Array];
    Object.assign(w, {
      [`${L}ln1.g`]: take(`${L}ln_1.weight`, [d]),
      [`${L}ln1.b`]: take(`${L}ln_1.bias`, [d]),
      [`${L}attn.wq`]: wq, [`${L}attn.wk`]: wk, [`${L}attn.wv`]: wv,
      [`${L}attn.bq`]: bq, [`${L}attn.bk`]: bk, [`${L}attn.bv`]: bv,
      [`${L}attn.wo`]: take(`${L}attn.c_proj.weight`, [d, d]),
      [`${L}attn.bo`]: take(`${L}attn.c_proj.bias`, [d]),
      [`${L}ln2.g`]: take(`${L}ln_2.weight`, [d]),
      [`${L}ln2.b`]: take(`${L}ln_2.bias`, [d]),
      [`${L}mlp.w1`]: take(`${L}mlp.c_fc.weight`, [d, cfg.dFf]),
      [`${L}mlp.b1`]: take(`${L}mlp.c_fc.bias`, [cfg.dFf]),
      [`${L}mlp.w2`]: take(`${L}mlp.c_proj.weight`, [cfg.dFf, d]),
      [`${L}mlp.b2`]: take(`${L}mlp.c_proj.bias`, [d]),
    });
  }
  w['lnf.g'] = take('ln_f.weight', [d]);
  w['lnf.b'] = take('ln_f.bias', [d]);
  const head = tensors.get('lm_head.weight');
  if (head) {
    if (JSON.stringify(head.shape) !== JSON.stringify([cfg.vocabSize, d])) throw new HfFormatError(`model.safetensors: lm_head.weight has shape ${JSON.stringify(head.shape)}, expected [${cfg.vocabSize}, ${d}]`);
    w.head = transpose(head.data, cfg.vocabSize, d);
  } else if (raw.tie_word_embeddings !== false) {
    w.head = transpose(w.wte as Float32Array, cfg.vocabSize, d);
  } else {
    throw new HfFormatError('model.safetensors has no lm_head.weight and config.json says tie_word_embeddings: false');
  }
  // Every tensor arch.ts needs is present (a typo above would otherwise surface much later).
  for (const [name] of weightShapes(cfg)) if (!w[name]) throw new Error(`hf import: ${name} not filled`);
  return { config: cfg, weights: w };
}
