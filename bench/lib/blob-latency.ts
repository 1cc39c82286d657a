/**
 * Latency of blob-store operations, several stores side by side: for each size and repetition, every
 * store in turn puts fresh bytes (a new blob), puts the same bytes again (the idempotent re-put of a
 * retried activity) and gets them back (with the sha256 check). Interleaving the stores per
 * repetition keeps a noisy neighbour from favouring one of them.
 */
import { randomBytes } from 'node:crypto';
import type { BlobStore } from '../../src/store/blob-store';

export interface LatencyRow {
  store: string;
  bytes: number;
  op: 'put new' | 'put again' | 'get';
  p50Ms: number;
  p90Ms: number;
  maxMs: number;
  reps: number;
}

export async function blobLatency(stores: Record<string, BlobStore>, sizes: number[], repsFor: (bytes: number) => number): Promise<LatencyRow[]> {
  const rows: LatencyRow[] = [];
  for (const bytes of sizes) {
    const samples: Record<string, Record<LatencyRow['op'], number[]>> = {};
    for (const name of Object.keys(stores)) samples[name] = { 'put new': [], 'put again': [], get: [] };
    for (let rep = 0; rep < repsFor(bytes); rep++) {
      for (const [name, store] of Object.entries(stores)) {
        const content = new Uint8Array(randomBytes(bytes));
        const s = samples[name]!;
        const ref = await timed(s['put new'], () => store.put(content, 'bench'));
        await timed(s['put again'], () => store.put(content, 'bench'));
        await timed(s.get, () => store.get(ref));
      }
    }
    for (const [name, ops] of Object.entries(samples)) {
      for (const [op, ms] of Object.entries(ops) as Array<[LatencyRow['op'], number[]]>) {
        rows.push({ store: name, bytes, op, p50Ms: percentile(ms, 50), p90Ms: percentile(ms, 90), maxMs: Math.max(...ms), reps: ms.length });
      }
    }
  }
  return rows;
}

async function timed<T>(into: number[], f: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const out = await f();
  into.push(performance.now() - t0);
  return out;
}

export function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function formatBytes(n: number): string {
  return n >= 1 << 20 ? `${n / (1 << 20)} MiB` : n >= 1 << 10 ? `${n / (1 << 10)} KiB` : `${n} B`;
}
