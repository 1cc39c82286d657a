/**
 * A prefix KV cache for one engine (one weight version): the keys and values of sequences the
 * engine has already run, so a request whose prompt starts with one of them (a tree branch
 * continuing from its parent's context, siblings sharing a prompt, a later turn of a chain) skips
 * prefilling that part. KV at position j depends only on tokens 0..j, so any common prefix of a
 * cached sequence and a prompt is reusable, not only whole entries.
 *
 * Bounded in bytes with least-recently-used eviction; lookups scan the entries (at most a few
 * hundred, each compared token by token up to the first difference), which costs far less than
 * the prefill it saves. Hits, reused tokens and evictions are counted for metrics.
 */

export interface PrefixCacheStats {
  /** Prompts looked up, and those that reused at least one cached position. */
  lookups: number;
  hits: number;
  /** Prompt tokens looked up, and those whose KV came from the cache. */
  promptTokens: number;
  reusedTokens: number;
  entries: number;
  bytes: number;
  evictions: number;
}

interface Entry {
  ids: number[];
  /** Per KV tensor (2 × layers): [heads, ids.length, headDim], row-major. */
  kv: Float32Array[];
  bytes: number;
}

export interface PrefixMatch {
  /** Positions reusable: the common prefix length (capped by the caller's limit). */
  length: number;
  entry: Entry;
}

export class PrefixKvCache {
  /** Most recently used last. */
  private entries: Entry[] = [];
  private bytes = 0;
  private readonly counts = { lookups: 0, hits: 0, promptTokens: 0, reusedTokens: 0, evictions: 0 };

  constructor(
    private readonly heads: number,
    private readonly headDim: number,
    private readonly maxBytes: number,
  ) {
    if (!(maxBytes >= 0)) throw new RangeError(`prefix cache size must be >= 0 bytes, got ${maxBytes}`);
  }

  /** The longest cached prefix of `ids`, at most `limit` positions; counted in the stats. */
  lookup(ids: readonly number[], limit: number): PrefixMatch | undefined {
    this.counts.lookups++;
    this.counts.promptTokens += ids.length;
    let best: PrefixMatch | undefined;
    for (const entry of this.entries) {
      const max = Math.min(limit, entry.ids.length, ids.length);
      let k = 0;
      while (k < max && entry.ids[k] === ids[k]) k++;
      if (k > 0 && (!best || k > best.length)) best = { length: k, entry };
    }
    if (!best) return undefined;
    this.counts.hits++;
    this.counts.reusedTokens += best.length;
    this.touch(best.entry);
    return best;
  }

  /**
   * Copies the first `length` positions of a match into a row of the batch's past buffers:
   * `past[t]` is [rows, heads, T, headDim]; the positions land in columns [col, col + length).
   */
  copyInto(match: PrefixMatch, past: readonly Float32Array[], row: number, T: number, col: number): void {
    const { heads, headDim } = this;
    const L = match.entry.ids.length;
    past.forEach((buf, t) => {
      const src = match.entry.kv[t]!;
      for (let h = 0; h < heads; h++) {
        const from = h * L * headDim;
        const to = ((row * heads + h) * T + col) * headDim;
        buf.set(src.subarray(from, from + match.length * headDim), to);
      }
    });
  }

  /**
   * Stores the KV of one row of the batch: `columns` lists, in order, the cache columns holding
   * the positions of `ids` (padding and gaps left out). Skipped when larger than the whole cache.
   */
  store(ids: readonly number[], past: readonly Float32Array[], row: number, T: number, columns: readonly number[]): void {
    if (columns.length !== ids.length) throw new RangeError(`prefix cache: ${ids.length} ids but ${columns.length} columns`);
    const { heads, headDim } = this;
    const L = ids.length;
    const bytes = past.length * heads * L * headDim * 4;
    if (L === 0 || bytes > this.maxBytes) return;
    const known = this.entries.find((e) => e.ids.length >= L && ids.every((id, i) => e.ids[i] === id));
    if (known) return this.touch(known);
    const kv = past.map((buf) => {
      const out = new Float32Array(heads * L * headDim);
      for (let h = 0; h < heads; h++) {
        columns.forEach((c, j) => {
          const from = ((row * heads + h) * T + c) * headDim;
          out.set(buf.subarray(from, from + headDim), (h * L + j) * headDim);
        });
      }
      return out;
    });
    this.entries.push({ ids: [...ids], kv, bytes });
    this.bytes += bytes;
    while (this.bytes > this.maxBytes) {
      const evicted = this.entries.shift()!;
      this.bytes -= evicted.bytes;
      this.counts.evictions++;
    }
  }

  stats(): PrefixCacheStats {
    return { ...this.counts, entries: this.entries.length, bytes: this.bytes };
  }

  private touch(entry: Entry): void {
    const i = this.entries.indexOf(entry);
    if (i >= 0 && i !== this.entries.length - 1) {
      this.entries.splice(i, 1);
      this.entries.push(entry);
    }
  }
}
