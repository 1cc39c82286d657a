import type { Completion, SamplingParams } from '../domain/types';
import { type GptConfig, headDim } from '../model/arch';
import { mixSeed, mulberry32 } from '../domain/rng';
import type { TextTokenizer } from '../model/tokenizer-types';
import { DecoderSession } from './decoder-session';
import { GenerationRow } from './generation-row';
import { KvPingPong } from './kv-cache';
import { PrefixKvCache, type PrefixCacheStats } from './prefix-cache';
import { SamplerScratch, tokenLogprob } from './sampling';
import type { RowControl } from './row-control';
import type { PolicyEngine, Prompt } from './types';

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
  /**
   * Bytes of KV the prefix cache may hold (least recently used evicted first); 0 (default) turns it
   * off. With it, a prompt that starts with a sequence this engine already ran reuses those
   * positions' keys and values instead of prefilling them (tree branches, shared prompts).
   */
  prefixCacheBytes?: number;
}

export interface GenerateOptions {
  /** Decode with the KV cache (default). false recomputes the whole sequence every step. */
  kvCache?: boolean;
  /** Per-row sampling seeds (see PolicyEngine.generate); a row without one falls back to params.seed. */
  seeds?: ReadonlyArray<number | undefined>;
  /** Called after every decoding step, e.g. to heartbeat a Temporal activity. */
  onStep?: (step: number, activeRows: number) => void;
  /** Per-row controls: cancellation, a callback per token, a constraint (its seed wins over seeds[i]). */
  rows?: ReadonlyArray<RowControl | undefined>;
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
    private readonly prefixCache: PrefixKvCache | undefined,
  ) {}

  static async create(init: OrtEngineInit): Promise<OrtEngine> {
    if (init.tokenizer.vocabSize > init.config.vocabSize) {
      throw new RangeError(`tokenizer has ${init.tokenizer.vocabSize} ids, model only ${init.config.vocabSize}`);
    }
    const session = await DecoderSession.create(init.onnx, init.config, init.threads ?? 1);
    const prefixCache = init.prefixCacheBytes ? new PrefixKvCache(init.config.nHeads, headDim(init.config), init.prefixCacheBytes) : undefined;
    return new OrtEngine(session, { ...init.config }, init.tokenizer, init.weightVersion, prefixCache);
  }

  /** Hits, reused tokens, size and evictions of the prefix cache (undefined when it is off). */
  prefixCacheStats(): PrefixCacheStats | undefined {
    return this.prefixCache?.stats();
  }

  async release(): Promise<void> {
    await this.session.release();
  }

  /**
   * Teacher-forced logprobs of tokenIds after promptIds under softmax(logits / temperature), the
   * distribution generate records: how a remote server's reported logprobs are checked against
   * these weights (activities/inference.ts syncRemoteWeights).
   */
  async scoreTokens(promptIds: number[], tokenIds: number[], temperature = 1): Promise<number[]> {
    if (promptIds.length === 0) throw new RangeError('scoreTokens needs a prompt of at least one token');
    const seq = [...promptIds, ...tokenIds.slice(0, -1)];
    const L = seq.length;
    if (L > this.config.maxSeq) throw new RangeError(`scoreTokens: ${L} positions exceed maxSeq ${this.config.maxSeq}`);
    const logits = await this.session.full(
      BigInt64Array.from(seq, (v) => BigInt(v)),
      BigInt64Array.from(seq, (_, i) => BigInt(i)),
      new BigInt64Array(L).fill(1n),
      1,
      L,
    );
    const V = this.config.vocabSize;
    return tokenIds.map((t, i) => tokenLogprob(logits, (promptIds.length - 1 + i) * V, V, t, temperature));
  }

  async generate(prompts: readonly Prompt[], params: SamplingParams, options: GenerateOptions = {}): Promise<Completion[]> {
    const rows = prompts.map((p, i) => {
      const ids = typeof p === 'string' ? this.tokenizer.encode(p) : [...p];
      if (ids.length === 0) throw new RangeError(`prompt ${i} encodes to no tokens`);
      const control = options.rows?.[i];
      const own = control?.seed ?? options.seeds?.[i];
      const rand = own !== undefined ? mulberry32(own) : params.seed !== undefined ? mulberry32(mixSeed(params.seed, i)) : Math.random;
      return new GenerationRow(ids, rand, control);
    });
    rows.forEach((r, i) => {
      if (options.rows?.[i]?.signal?.aborted) {
        r.aborted = true;
        r.finishEarly('length');
      } else if (params.maxNewTokens <= 0 || r.length >= this.config.maxSeq) r.finishEarly('length');
    });
    const active = rows.filter((r) => r.finish === undefined);
    if (active.length > 0) {
      await (options.kvCache === false ? this.decodeRecompute(active, params, options) : this.decodeCached(active, params, options));
    }
    return rows.map((r) => r.toCompletion(this.tokenizer));
  }

  /**
   * Prefill once, then feed one token per row per step against the growing KV cache. With the prefix
   * cache, each row's longest cached prefix (all but its last prompt token at most) is copied into
   * the past instead of prefilled. Column layout of row b after prefill (C = longest reuse, R = most
   * prompt tokens left to prefill): [C - c_b masked][c_b cached][R - r_b masked][r_b prefilled], so
   * every row's last prompt token sits in the final column; masked columns are holes the attention
   * mask keeps closed for the rest of the generation.
   */
  private async decodeCached(rows: GenerationRow[], params: SamplingParams, options: GenerateOptions): Promise<void> {
    const cfg = this.config;
    const V = cfg.vocabSize;
    const scratch = new SamplerScratch(V);
    const matches = rows.map((r) => this.prefixCache?.lookup(r.promptIds, r.promptIds.length - 1));
    rows.forEach((r, b) => (r.cachedPromptTokens = matches[b]?.length ?? 0));
    const C = Math.max(...rows.map((r) => r.cachedPromptTokens));
    const R = Math.max(...rows.map((r) => r.promptIds.length - r.cachedPromptTokens));
    const steps = Math.min(params.maxNewTokens, cfg.maxSeq);
    const kv = new KvPingPong(2 * cfg.nLayers, cfg.nHeads, headDim(cfg), rows.length, C + R + steps);
    let batch = rows;
    let n = batch.length;
    let holes: Hole[][] = batch.map((r) => {
      const c = r.cachedPromptTokens;
      const left = r.promptIds.length - c;
      return [[0, C - c], [C, C + R - left]];
    });
    // The cache columns of each row's fed positions, in order (what the prefix cache stores).
    let columns: number[][] = batch.map((r) => {
      const c = r.cachedPromptTokens;
      const left = r.promptIds.length - c;
      return [...range(C - c, C), ...range(C + R - left, C + R)];
    });
    if (C > 0) {
      const past = kv.past(n, C);
      batch.forEach((_, b) => {
        const m = matches[b];
        if (m && m.length > 0) this.prefixCache!.copyInto(m, past, b, C, C - m.length);
      });
    }
    const maskBuf = new BigInt64Array(n * (C + R + steps));
    const ids = new BigInt64Array(n * R).fill(BigInt(this.tokenizer.padId));
    const pos = new BigInt64Array(n * R);
    batch.forEach((r, b) => {
      const c = r.cachedPromptTokens;
      const left = r.promptIds.length - c;
      for (let j = 0; j < left; j++) {
        ids[b * R + (R - left) + j] = BigInt(r.promptIds[c + j]!);
        pos[b * R + (R - left) + j] = BigInt(c + j);
      }
    });
    let T = C + R;
    let logits = await this.session.step(ids, pos, fillMask(maskBuf, holes, T), n, R, T, kv);
    let rowStride = R * V;
    let lastOffset = (R - 1) * V;
    const nextIds = new BigInt64Array(n);
    const nextPos = new BigInt64Array(n);

    for (let step = 0; ; step++) {
      const keep: number[] = [];
      batch.forEach((r, b) => {
        r.accept(logits, b * rowStride + lastOffset, params, this.tokenizer, cfg.maxSeq, scratch);
        if (r.finish === undefined) keep.push(b);
        // A finished row leaves its sequence's KV (every position fed so far) to later requests.
        else this.prefixCache?.store([...r.promptIds, ...r.tokenIds.slice(0, -1)], kv.past(n, T), b, T, columns[b]!);
      });
      options.onStep?.(step, keep.length);
      if (keep.length === 0) return;
      if (keep.length < n) {
        kv.keepRows(keep, T);
        batch = keep.map((b) => batch[b] as GenerationRow);
        holes = keep.map((b) => holes[b]!);
        columns = keep.map((b) => columns[b]!);
        n = keep.length;
      }
      batch.forEach((r, b) => {
        nextIds[b] = BigInt(r.lastToken);
        nextPos[b] = BigInt(r.length - 1);
        columns[b]!.push(T);
      });
      T += 1;
      logits = await this.session.step(nextIds.subarray(0, n), nextPos.subarray(0, n), fillMask(maskBuf, holes, T), n, 1, T, kv);
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

/** A half-open range of cache columns [from, to) that a row never attends to. */
type Hole = [number, number];

/** [n, T] attention mask in a reusable buffer: 1 everywhere but each row's holes. */
function fillMask(buf: BigInt64Array, holes: readonly Hole[][], T: number): BigInt64Array {
  const view = buf.subarray(0, holes.length * T);
  holes.forEach((rowHoles, b) => {
    view.fill(1n, b * T, (b + 1) * T);
    for (const [from, to] of rowHoles) if (to > from) view.fill(0n, b * T + from, b * T + to);
  });
  return view;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
