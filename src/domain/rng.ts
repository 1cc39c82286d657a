/**
 * Seeded randomness for every layer (tasks, trees, sampling seeds, model init, batch order), one
 * generator and one seed deriver. Workflow code imports it, so nothing here may touch Math.random
 * or the clock: the same seed must give the same problems on every replay and machine, and the main
 * job's numbers are reproduced exactly by seed. python/durable_rl_torch/rng.py ports mulberry32,
 * mixSeed and fillNormal bit for bit (test/fixtures/rng-vectors.json pins them for both).
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
  return fmix32(fnv1a32(text)) / 2 ** 32;
}

/** murmur3's 32-bit finaliser: every input bit reaches every output bit. */
function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The seed of stream `stream` of `seed` (batch row i, epoch e, SFT step s), so streams do not share
 * (and correlate) a sequence and row i does not depend on its neighbours. Streams named by text hash
 * their name with fnv1a32 instead, as the workflows' problem draws do.
 */
export function mixSeed(seed: number, stream: number): number {
  return fmix32((seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0);
}

/** A short fingerprint of a JSON value (a run's complete config and starting weights): 8 hex digits. */
export function fingerprint(value: unknown): string {
  return fnv1a32(JSON.stringify(value)).toString(16).padStart(8, '0');
}

/** Fills `out` with N(0, std²) samples (Box-Muller). */
export function fillNormal(out: Float32Array, std: number, rand: () => number): Float32Array {
  for (let i = 0; i < out.length; i += 2) {
    const u1 = Math.max(rand(), 1e-12);
    const r = Math.sqrt(-2 * Math.log(u1)) * std;
    const theta = 2 * Math.PI * rand();
    out[i] = r * Math.cos(theta);
    if (i + 1 < out.length) out[i + 1] = r * Math.sin(theta);
  }
  return out;
}
