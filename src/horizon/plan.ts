/**
 * A plan of H moves and its cache: the policy writes H moves at once; they are executed
 * numActionChunks at a time from an offset into the plan; when the offset reaches H the policy
 * replans from the current observation. The cache is plain data (workflow state).
 */
import { stripEos } from '../planact/protocol';
import { isMove, type Move } from '../tasks/grid/moves';

export type PlanError = 'short-plan' | 'bad-move';

export type ParsedPlan = { ok: true; moves: Move[] } | { ok: false; error: PlanError; message: string };

/** The plan in a generation of (at most) H tokens: exactly H move characters, else why not. */
export function parsePlan(text: string, horizon: number): ParsedPlan {
  const body = stripEos(text);
  const bad = [...body].findIndex((ch) => !isMove(ch));
  if (bad >= 0) return { ok: false, error: 'bad-move', message: `plan has ${JSON.stringify(body[bad])} at position ${bad}; moves are U, D, L, R, X` };
  if (body.length < horizon) return { ok: false, error: 'short-plan', message: `plan has ${body.length} of ${horizon} moves` };
  return { ok: true, moves: [...body].slice(0, horizon) as Move[] };
}

export interface PlanCache {
  /** Which plan of the episode (1-based): each replan adds one. */
  planIndex: number;
  horizon: number;
  moves: Move[];
  /** Moves of the plan consumed so far (executed, or skipped because the episode ended). */
  offset: number;
}

export function newPlan(planIndex: number, horizon: number, moves: Move[]): PlanCache {
  if (moves.length !== horizon) throw new RangeError(`a plan of horizon ${horizon} needs ${horizon} moves, got ${moves.length}`);
  return { planIndex, horizon, moves, offset: 0 };
}

/** True when there is no plan yet or its offset reached H: the policy must plan again. */
export function needsReplan(cache: PlanCache | null): boolean {
  return cache === null || cache.offset >= cache.horizon;
}

/** The next chunk: up to numActionChunks moves from the offset (fewer at the plan's end or the step budget). */
export function nextChunk(cache: PlanCache, numActionChunks: number, stepsLeft: number): { offset: number; moves: Move[] } {
  const n = Math.max(0, Math.min(numActionChunks, cache.horizon - cache.offset, stepsLeft));
  return { offset: cache.offset, moves: cache.moves.slice(cache.offset, cache.offset + n) };
}

/** The cache after a chunk of `length` moves was sent to the environment. */
export function advance(cache: PlanCache, length: number): PlanCache {
  if (cache.offset + length > cache.horizon) throw new RangeError(`offset ${cache.offset} + ${length} passes horizon ${cache.horizon}`);
  return { ...cache, offset: cache.offset + length };
}

/**
 * The chunk's logprobs: the slice [offset, offset + length) of its plan's per-move logprobs (move k
 * is token k of the plan's generation). What the rollout recorded and what training recomputes.
 */
export function chunkLogprobs(planLogprobs: readonly number[], offset: number, length: number): number[] {
  if (offset < 0 || length < 0 || offset + length > planLogprobs.length) {
    throw new RangeError(`chunk [${offset}, ${offset + length}) is outside a plan of ${planLogprobs.length} tokens`);
  }
  return planLogprobs.slice(offset, offset + length);
}
