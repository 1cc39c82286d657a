/**
 * bench:planact's stand-in for a GPU engine's reply time: `base` ms spread by ± `jitter`, decided by
 * a hash of the request and its sampling seed, so a given request waits the same on every path (in
 * the bench's process or in its orchestration worker's, bench/lib/planact-worker.ts) and the
 * episodes of a GRPO group, other samples of one prompt, wait differently.
 */
export function requestLatency(base: number, jitter: number, role: string, prompt: string, seed: number | undefined): number {
  let h = 2166136261;
  for (const ch of `${role}:${seed ?? ''}:${prompt}`) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
  return base * (1 + jitter * (2 * (h / 2 ** 32) - 1));
}
