/**
 * Seeded randomness (tasks, trees, sampling seeds). Workflow code imports it, so nothing here may touch
 * Math.random or the clock: the same seed must give the same problems on every replay and machine.
 */

/** Uniform float in [0, 1). */
export type Rng = () => number;

/** mulberry32: 32-bit state, good enough statistics for sampling problems, trivially portable. */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Integer in [lo, hi], both inclusive. */
export function randInt(rng: Rng, lo: number, hi: number): number {
  if (!Number.isInteger(lo) || !Number.isInteger(hi) || hi < lo) {
    throw new RangeError(`randInt needs integers lo <= hi, got ${lo}..${hi}`);
  }
  return lo + Math.floor(rng() * (hi - lo + 1));
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  if (items.length === 0) throw new RangeError('pick from an empty list');
  return items[Math.floor(rng() * items.length)] as T;
}

/** FNV-1a over UTF-16 code units: a stable, dependency-free hash (not for security). */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * A uniform hash of a text in [0, 1): FNV-1a scrambled by murmur3's finaliser. FNV-1a alone is not
 * fit for `% n`: its lowest bit is the parity of the characters' lowest bits (an odd-sum 1+2 and an
 * even-sum 1+3 always land apart), and its low bits stay weak; the finaliser spreads every input bit
 * over the whole word.
 */
export function uniformHash(text: string): number {
  let h = fnv1a32(text);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 2 ** 32;
}

/** Derives an independent stream seed, so sub-generators do not share (and correlate) a sequence. */
export function deriveSeed(seed: number, label: string): number {
  return fnv1a32(`${seed >>> 0}:${label}`);
}

/** A short fingerprint of a JSON value (a run's complete config and starting weights): 8 hex digits. */
export function fingerprint(value: unknown): string {
  return fnv1a32(JSON.stringify(value)).toString(16).padStart(8, '0');
}
