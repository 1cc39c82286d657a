import type { FinishReason } from '../domain/types';

/**
 * Pure next-token logic: distribution statistics, temperature/top-p sampling and finish rules.
 * Works on a slice [offset, offset+V) of a logits buffer so engines can pass ORT output
 * without copying.
 */

export interface TokenStats {
  /** log Σ exp(logits): logprob(t) = logits[t] - logZ. */
  logZ: number;
  /** Entropy of softmax(logits) in nats divided by ln(V), in [0, 1]. */
  entropy: number;
}

/** Statistics of the raw (temperature 1) distribution. */
export function tokenStats(logits: ArrayLike<number>, offset: number, V: number): TokenStats {
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[offset + i] as number);
  let sum = 0;
  let weighted = 0;
  for (let i = 0; i < V; i++) {
    const x = (logits[offset + i] as number) - max;
    const e = Math.exp(x);
    sum += e;
    weighted += e * x;
  }
  const logSum = Math.log(sum);
  // H = -Σ p (x - logSum) = logSum - Σ p x, with x shifted by max (cancels out).
  const entropy = V > 1 ? Math.max(0, logSum - weighted / sum) / Math.log(V) : 0;
  return { logZ: max + logSum, entropy };
}

/**
 * The temperature whose distribution a sampled token's logprob is taken under. Greedy decoding
 * (temperature 0) has no sampling distribution; its logprobs are the raw model's (temperature 1).
 * The trainer divides its logits by the same value, so engine and trainer logprobs agree.
 */
export function logprobTemperature(temperature: number): number {
  return temperature > 0 ? temperature : 1;
}

/**
 * log p(token) under softmax(logits / logprobTemperature(temperature)): the distribution the
 * token was drawn from. Top-p truncation is deliberately not reflected (the nucleus is not
 * renormalised here): like verl, whose actor recomputes logprobs from logits / T over the whole
 * vocabulary, the PPO ratio compares tempered but untruncated distributions.
 */
export function tokenLogprob(logits: ArrayLike<number>, offset: number, V: number, token: number, temperature: number): number {
  const T = logprobTemperature(temperature);
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[offset + i] as number);
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(((logits[offset + i] as number) - max) / T);
  return ((logits[offset + token] as number) - max) / T - Math.log(sum);
}

/**
 * The k most likely next tokens and their logprobs under the same distribution as tokenLogprob
 * (softmax(logits / T), temperature 1 when greedy), most likely first; ties by lower id.
 */
export function topLogprobs(logits: ArrayLike<number>, offset: number, V: number, temperature: number, k: number): Array<{ id: number; logprob: number }> {
  const T = logprobTemperature(temperature);
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[offset + i] as number);
  let sum = 0;
  for (let i = 0; i < V; i++) sum += Math.exp(((logits[offset + i] as number) - max) / T);
  const logZ = Math.log(sum);
  const best: Array<{ id: number; logprob: number }> = [];
  for (let i = 0; i < V; i++) {
    const lp = ((logits[offset + i] as number) - max) / T - logZ;
    if (best.length < k || lp > best[best.length - 1]!.logprob) {
      best.push({ id: i, logprob: lp });
      best.sort((a, b) => b.logprob - a.logprob || a.id - b.id);
      if (best.length > k) best.pop();
    }
  }
  return best;
}

export function argmax(logits: ArrayLike<number>, offset: number, V: number): number {
  let best = 0;
  let bestVal = -Infinity;
  for (let i = 0; i < V; i++) {
    const v = logits[offset + i] as number;
    if (v > bestVal) {
      bestVal = v;
      best = i;
    }
  }
  return best;
}

/** Reusable buffers so sampling allocates nothing per token. */
export class SamplerScratch {
  readonly weights: Float64Array;
  readonly order: Uint32Array;
  /** One row's logits after a constraint's mask. */
  readonly masked: Float32Array;
  constructor(readonly V: number) {
    this.weights = new Float64Array(V);
    this.order = new Uint32Array(V);
    this.masked = new Float32Array(V);
  }
}

/**
 * Draws a token: greedy when temperature is 0, else from softmax(logits / temperature)
 * restricted to the smallest set of top tokens whose mass reaches topP.
 * `rand` returns uniform [0, 1).
 */
export function sampleToken(
  logits: ArrayLike<number>,
  offset: number,
  V: number,
  temperature: number,
  topP: number,
  rand: () => number,
  scratch: SamplerScratch = new SamplerScratch(V),
): number {
  if (temperature <= 0) return argmax(logits, offset, V);
  const w = scratch.weights;
  let max = -Infinity;
  for (let i = 0; i < V; i++) max = Math.max(max, logits[offset + i] as number);
  let total = 0;
  for (let i = 0; i < V; i++) {
    const e = Math.exp(((logits[offset + i] as number) - max) / temperature);
    w[i] = e;
    total += e;
  }
  if (topP >= 1) return drawFrom(w, V, total, rand);

  const order = scratch.order;
  for (let i = 0; i < V; i++) order[i] = i;
  order.sort((a, b) => (w[b] as number) - (w[a] as number));
  // Relative slack so a nucleus that reaches topP exactly is not widened by rounding.
  const target = Math.max(topP, 0) * total * (1 - 1e-6);
  let kept = 0;
  let mass = 0;
  // Always keep at least one token, even for topP = 0.
  while (kept < V && (kept === 0 || mass < target)) {
    mass += w[order[kept] as number] as number;
    kept++;
  }
  let r = rand() * mass;
  for (let k = 0; k < kept; k++) {
    const id = order[k] as number;
    r -= w[id] as number;
    if (r < 0) return id;
  }
  return order[kept - 1] as number;
}

function drawFrom(w: Float64Array, V: number, total: number, rand: () => number): number {
  let r = rand() * total;
  let last = 0;
  for (let i = 0; i < V; i++) {
    const x = w[i] as number;
    if (x > 0) last = i;
    r -= x;
    if (r < 0) return i;
  }
  // Rounding can leave r marginally ≥ 0: fall back to the last token with mass.
  return last;
}

export interface FinishCheck {
  token: number;
  eosId: number;
  /** Tokens generated so far, including `token`. */
  generated: number;
  maxNewTokens: number;
  /** Prompt plus generated tokens. */
  totalLength: number;
  maxSeq: number;
  /** Decoded generated text (only needed when stops is non-empty). */
  text?: string;
  stops: readonly string[];
}

/**
 * Why a sequence ends after `token`, or undefined to continue. EOS wins over stop strings,
 * which win over length limits. The total (prompt + generated) never exceeds maxSeq, so
 * every finished sequence still fits a training batch.
 */
export function finishReason(c: FinishCheck): FinishReason | undefined {
  if (c.token === c.eosId) return 'eos';
  if (c.text !== undefined && c.stops.some((s) => s.length > 0 && (c.text as string).includes(s))) return 'stop';
  if (c.generated >= c.maxNewTokens || c.totalLength >= c.maxSeq) return 'length';
  return undefined;
}
