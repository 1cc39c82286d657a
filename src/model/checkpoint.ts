import { type GptConfig, type WeightMap, weightShapes } from './arch';
import type { AdamConfig, AdamState } from './adam';

/** A resumable training state. */
export interface Checkpoint {
  config: GptConfig;
  weights: WeightMap;
  optimizer?: AdamState;
  /** Training steps taken (the weight version of the policy these weights define). */
  step: number;
}

const MAGIC = 'DRLCKPT1';
/** 2: the output head has no bias (GPT-2's layout, src/model/arch.ts); format 1 had one. */
const FORMAT_VERSION = 2;

interface Header {
  format: number;
  config: GptConfig;
  step: number;
  optimizer: { config: AdamConfig; step: number } | null;
  /** Float32 counts per tensor, in layout order, so a reader can validate before copying. */
  sizes: number[];
}

// Key order fixed here so equal content always serialises to equal bytes.
function canonicalConfig(c: GptConfig): GptConfig {
  return { vocabSize: c.vocabSize, maxSeq: c.maxSeq, dModel: c.dModel, nLayers: c.nLayers, nHeads: c.nHeads, dFf: c.dFf };
}

function canonicalAdam(c: AdamConfig): AdamConfig {
  return { lr: c.lr, beta1: c.beta1, beta2: c.beta2, eps: c.eps, weightDecay: c.weightDecay, clipNorm: c.clipNorm };
}

/** Layout: weights in weightShapes order, then Adam m, then Adam v (same order). */
function layout(ckpt: Checkpoint): Float32Array[] {
  const shapes = weightShapes(ckpt.config);
  const pick = (src: WeightMap, what: string): Float32Array[] =>
    shapes.map(([name, shape]) => {
      const t = src[name];
      const size = shape.reduce((a, b) => a * b, 1);
      if (!t || t.length !== size) throw new Error(`checkpoint: ${what} ${name} missing or not ${size} floats`);
      return t;
    });
  const out = pick(ckpt.weights, 'weight');
  if (ckpt.optimizer) out.push(...pick(ckpt.optimizer.m, 'adam.m'), ...pick(ckpt.optimizer.v, 'adam.v'));
  return out;
}

/** Single self-describing blob: magic, u32 header length, JSON header, padding to 4, raw little-endian f32. */
export function encodeCheckpoint(ckpt: Checkpoint): Uint8Array {
  const tensors = layout(ckpt);
  const header: Header = {
    format: FORMAT_VERSION,
    config: canonicalConfig(ckpt.config),
    step: ckpt.step,
    optimizer: ckpt.optimizer ? { config: canonicalAdam(ckpt.optimizer.config), step: ckpt.optimizer.step } : null,
    sizes: tensors.map((t) => t.length),
  };
  const json = new TextEncoder().encode(JSON.stringify(header));
  const dataStart = align4(MAGIC.length + 4 + json.length);
  const total = tensors.reduce((n, t) => n + t.length, 0);
  const out = new Uint8Array(dataStart + total * 4);
  out.set(new TextEncoder().encode(MAGIC), 0);
  new DataView(out.buffer).setUint32(MAGIC.length, json.length, true);
  out.set(json, MAGIC.length + 4);
  const floats = new Float32Array(out.buffer, dataStart, total);
  let offset = 0;
  for (const t of tensors) {
    floats.set(t, offset);
    offset += t.length;
  }
  assertLittleEndian();
  return out;
}

export function decodeCheckpoint(bytes: Uint8Array): Checkpoint {
  const magic = new TextDecoder().decode(bytes.subarray(0, MAGIC.length));
  if (magic !== MAGIC) throw new Error('not a durable-rl checkpoint');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const jsonLen = view.getUint32(MAGIC.length, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(MAGIC.length + 4, MAGIC.length + 4 + jsonLen))) as Header;
  if (header.format === 1) throw new Error('checkpoint format 1 was written for the earlier architecture with an output bias (headBias); this version reads format 2: train the policy again');
  if (header.format !== FORMAT_VERSION) throw new Error(`unsupported checkpoint format ${header.format}`);
  const dataStart = align4(MAGIC.length + 4 + jsonLen);
  const total = header.sizes.reduce((a, b) => a + b, 0);
  if (bytes.byteLength !== dataStart + total * 4) throw new Error('checkpoint is truncated or has trailing bytes');
  assertLittleEndian();
  // Copy once into an aligned buffer: the input may sit at any byte offset. Uint8Array's slice,
  // not the argument's own: a Node Buffer's slice is a view whose .buffer starts elsewhere.
  const floats = new Float32Array(Uint8Array.prototype.slice.call(bytes, dataStart).buffer);
  const shapes = weightShapes(header.config);
  let offset = 0;
  let index = 0;
  const take = (): WeightMap => {
    const out: WeightMap = {};
    for (const [name] of shapes) {
      const size = header.sizes[index++] as number;
      out[name] = floats.slice(offset, offset + size);
      offset += size;
    }
    return out;
  };
  const weights = take();
  const ckpt: Checkpoint = { config: header.config, weights, step: header.step };
  if (header.optimizer) {
    const m = take();
    const v = take();
    ckpt.optimizer = { config: header.optimizer.config, step: header.optimizer.step, m, v };
  }
  return ckpt;
}

function align4(n: number): number {
  return (n + 3) & ~3;
}

function assertLittleEndian(): void {
  if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {
    throw new Error('checkpoint raw data is little-endian; big-endian hosts are not supported');
  }
}
