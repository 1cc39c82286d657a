import type { Completion, SamplingParams } from '../domain/types';
import { type GptConfig, headDim } from '../model/arch';
import { mixSeed, mulberry32 } from '../model/rng';
import type { TextTokenizer } from '../model/tokenizer-types';
import { DecoderSession } from './decoder-session';
import { GenerationRow } from './generation-row';
import { KvPingPong } from './kv-cache';
import { SamplerScratch } from './sampling';
import type { PolicyEngine } from './types';

export interface OrtEngineInit {
  /** ONNX model bytes from exportOnnx. */
  onnx: Uint8Array;
  config: GptConfig;
  tokenizer: TextTokenizer;
  weightVersion: number;
  /**
   * onnxruntime intra-op threads; default 1. Measured on the shared 2-core machines: a second
   * thread slows single-row decoding by ~30% (per-op sync on ~60 tiny ops) and gains ~10% at
   * batch 64, while spinning threads take CPU from the trainer and Temporal. Raise it on
   * machines with idle cores.
   */
  threads?: number;
}

export interface GenerateOptions {
  /** Decode with the KV cache (default). false recomputes the whole sequence every step. */
  kvCache?: boolean;
  /** Per-row sampling seeds (see PolicyEngine.generate); a row without one falls back to params.seed. */
  seeds?: ReadonlyArray<number | undefined>;
  /** Called after every decoding step, e.g. to heartbeat a Temporal activity. */
  onStep?: (step: number, activeRows: number) => void;
}

/**
 * The embedded policy served by onnxruntime-node on CPU. One engine per weight version:
 * publishing new weights means creating a new engine (and releasing the old one).
 */
export class OrtEngine implements PolicyEngine {
  private constructor(
    private readonly session: DecoderSession,
    readonly config: GptConfig,
    readonly tokenizer: TextTokenizer,
    readonly weightVersion: number,
  ) {}

  static async create(init: OrtEngineInit): Promise<OrtEngine> {
    if (init.tokenizer.vocabSize > init.config.vocabSize) {
      throw new RangeError(`tokenizer has ${init.tokenizer.vocabSize} ids, model only ${init.config.vocabSize}`);
    }
    const session = await DecoderSession.create(init.onnx, init.config, init.threads ?? 1);
    return new OrtEngine(session, { ...init.config }, init.tokenizer, init.weightVersion);
  }

  async release(): Promise<void> {
    await this.session.release();
  }

  async generate(prompts: string[], params: SamplingParams, options: GenerateOptions = {}): Promise<Completion[]> {
    const rows = prompts.map((p, i) => {
      const ids = this.tokenizer.encode(p);
      if (ids.length === 0) throw new RangeError(`prompt ${i} encodes to no tokens`);
      const own = options.seeds?.[i];
      const rand = own !== undefined ? mulberry32(own) : params.seed !== undefined ? mulberry32(mixSeed(params.seed, i)) : Math.random;
      return new GenerationRow(ids, rand);
    });
    for (const r of rows) {
      if (params.maxNewTokens <= 0 || r.length >= this.config.maxSeq) r.finishEarly('length');
    }
    const active = rows.filter((r) => r.finish === undefined);
    if (active.length > 0) {
      await (options.kvCache === false ? this.decodeRecompute(active, params, options) : this.decodeCached(active, params, options));
    }
    return rows.map((r) => r.toCompletion(this.tokenizer));
  }

  /** Prefill once, then feed one token per row per step against the growing KV cache. */
  private async decodeCached(rows: GenerationRow[], params: SamplingParams, options: GenerateOptions): Promise<void> {
    const cfg = this.config;
    const V = cfg.vocabSize;
    const scratch = new SamplerScratch(V);
    const P = Math.max(...rows.map((r) => r.promptIds.length));
    const steps = Math.min(params.maxNewTokens, cfg.maxSeq);
    const kv = new KvPingPong(2 * cfg.nLayers, cfg.nHeads, headDim(cfg), rows.length, P + steps);
    let batch = rows;
    let n = batch.length;
    // Left padding puts every row's last real token in the final column; pads[b] leading columns are masked.
    let pads = batch.map((r) => P - r.promptIds.length);
    const maskBuf = new BigInt64Array(n * (P + steps));
    const ids = new BigInt64Array(n * P).fill(BigInt(this.tokenizer.padId));
    const pos = new BigInt64Array(n * P);
    batch.forEach((r, b) => {
      const pad = pads[b] as number;
      r.promptIds.forEach((t, j) => {
        ids[b * P + pad + j] = BigInt(t);
        pos[b * P + pad + j] = BigInt(j);
      });
    });
    let T = P;
    let logits = await this.session.step(ids, pos, fillMask(maskBuf, pads, T), n, P, T, kv);
    let rowStride = P * V;
    let lastOffset = (P - 1) * V;
    const nextIds = new BigInt64Array(n);
    const nextPos = new BigInt64Array(n);

    for (let step = 0; ; step++) {
      const keep: number[] = [];
      batch.forEach((r, b) => {
        r.accept(logits, b * rowStride + lastOffset, params, this.tokenizer, cfg.maxSeq, scratch);
        if (r.finish === undefined) keep.push(b);
      });
      options.onStep?.(step, keep.length);
      if (keep.length === 0) return;
      if (keep.length < n) {
        kv.keepRows(keep, T);
        batch = keep.map((b) => batch[b] as GenerationRow);
        pads = keep.map((b) => pads[b] as number);
        n = keep.length;
      }
      batch.forEach((r, b) => {
        nextIds[b] = BigInt(r.lastToken);
        nextPos[b] = BigInt(r.length - 1);
      });
      T += 1;
      logits = await this.session.step(nextIds.subarray(0, n), nextPos.subarray(0, n), fillMask(maskBuf, pads, T), n, 1, T, kv);
      rowStride = V;
      lastOffset = 0;
    }
  }

  /** Baseline without cache: the full left-padded sequence is run through the model every step. */
  private async decodeRecompute(rows: GenerationRow[], params: SamplingParams, options: GenerateOptions): Promise<void> {
    const V = this.config.vocabSize;
    const scratch = new SamplerScratch(V);
    let batch = rows;
    for (let step = 0; batch.length > 0; step++) {
      const n = batch.length;
      const L = Math.max(...batch.map((r) => r.length));
      const ids = new BigInt64Array(n * L).fill(BigInt(this.tokenizer.padId));
      const pos = new BigInt64Array(n * L);
      const mask = new BigInt64Array(n * L);
      batch.forEach((r, b) => {
        const seq = [...r.promptIds, ...r.tokenIds];
        const pad = L - seq.length;
        seq.forEach((t, j) => {
          ids[b * L + pad + j] = BigInt(t);
          pos[b * L + pad + j] = BigInt(j);
          mask[b * L + pad + j] = 1n;
        });
      });
      const logits = await this.session.full(ids, pos, mask, n, L);
      batch.forEach((r, b) => r.accept(logits, (b * L + L - 1) * V, params, this.tokenizer, this.config.maxSeq, scratch));
      batch = batch.filter((r) => r.finish === undefined);
      options.onStep?.(step, batch.length);
    }
  }
}

/** [n, T] attention mask in a reusable buffer: row b has pads[b] masked leading columns. */
function fillMask(buf: BigInt64Array, pads: readonly number[], T: number): BigInt64Array {
  const view = buf.subarray(0, pads.length * T);
  pads.forEach((pad, b) => {
    view.fill(0n, b * T, b * T + pad);
    view.fill(1n, b * T + pad, (b + 1) * T);
  });
  return view;
}
