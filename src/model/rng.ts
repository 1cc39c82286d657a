/**
 * Small seeded PRNGs. Model init and sampling must be reproducible from a seed alone,
 * independent of tfjs backend or Math.random.
 */

// One generator for the whole project: tasks (workflow code) and the model draw from the same one.
export { mulberry32 } from '../domain/rng';

/** Derives an independent stream seed, so e.g. batch row i does not depend on its neighbours. */
export function mixSeed(seed: number, stream: number): number {
  let h = (seed ^ Math.imul(stream + 1, 0x9e3779b9)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
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
