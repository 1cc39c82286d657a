/**
 * Closed-loop load for `npm run bench:gateway`, the same code in the bench process (clients of the
 * engine, no HTTP) and in its client processes (bench/lib/gateway-client.ts, clients of the
 * gateway): each client sends its next request when the last one returns, from a start time shared
 * by every process, and only requests that finish inside the measured window (after the warm-up, and
 * before the window's end or an earlier stop) are counted.
 */

/** Milliseconds on a clock every process on the machine shares (epoch-based, sub-millisecond). */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The p-th percentile (0–100) of xs, NaN for no samples. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** When a load runs: from startAt (nowMs's clock), warmUpMs not counted, then durationMs counted. */
export interface LoadWindow {
  startAt: number;
  warmUpMs: number;
  durationMs: number;
}

export interface LoadResult {
  /** Latency of every request that finished inside the window, in ms. */
  latenciesMs: number[];
  /** Tokens those requests generated. */
  tokens: number;
  /** The window's length as it ran (shorter than durationMs when stopped early). */
  seconds: number;
  /** Requests that failed (a client stops at its first failure), and the first failure's message. */
  errors: number;
  firstError?: string;
}

/** Ends a load early: clients send nothing after `at`, and the window closes there. */
export class LoadStop {
  at = Number.POSITIVE_INFINITY;
}

/**
 * `clients` concurrent clients, each sending its next request (send(i), i counting up from
 * firstIndex across the clients) as soon as its last one returned; send resolves to the tokens the
 * request generated.
 */
export async function closedLoop(send: (i: number) => Promise<number>, clients: number, window: LoadWindow, firstIndex = 0, stop = new LoadStop()): Promise<LoadResult> {
  await new Promise((r) => setTimeout(r, Math.max(0, window.startAt - nowMs())));
  const from = window.startAt + window.warmUpMs;
  const end = () => Math.min(window.startAt + window.warmUpMs + window.durationMs, stop.at);
  const done: Array<{ at: number; ms: number; tokens: number }> = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = firstIndex;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (nowMs() < end()) {
        const i = next++;
        const s = nowMs();
        try {
          const tokens = await send(i);
          const at = nowMs();
          done.push({ at, ms: at - s, tokens });
        } catch (err) {
          errors++;
          firstError ??= err instanceof Error ? err.message : String(err);
          return;
        }
      }
    }),
  );
  const to = end();
  const counted = done.filter((d) => d.at >= from && d.at <= to);
  return {
    latenciesMs: counted.map((d) => d.ms),
    tokens: counted.reduce((n, d) => n + d.tokens, 0),
    seconds: Math.max(0, to - from) / 1000,
    errors,
    ...(firstError !== undefined ? { firstError } : {}),
  };
}

/** What the bench tells a client process (over Node's IPC channel). */
export type ToClient =
  /** Run `clients` closed-loop chat clients against the gateway in this window, then send a result. */
  | { kind: 'chat'; baseURL: string; model: string; clients: number; firstIndex: number; maxTokens: number; window: LoadWindow }
  /** End the running chat load at `at` (nowMs's clock). */
  | { kind: 'stop'; at: number }
  /** Send one /v1/completions request of these prompts, then send big-done. */
  | { kind: 'big'; baseURL: string; model: string; prompts: string[]; maxTokens: number }
  /** Abort the big request (the client disconnects; the gateway cancels its prompts). */
  | { kind: 'abort' };

/** What a client process answers. */
export type FromClient =
  | { kind: 'ready' }
  /** cpuMs: the CPU time this process used for the load (user + system, all its threads). */
  | { kind: 'result'; result: LoadResult; cpuMs: number }
  | { kind: 'big-done'; ok: boolean; aborted: boolean; seconds: number; choices: number; error?: string };

/** The small chat request every client sends (the same text on both paths of the bench). */
export function smallChat(i: number): Array<{ role: 'user'; content: string }> {
  return [{ role: 'user', content: `Evaluate: ${i % 97}+${(i * 7) % 89}\n` }];
}
