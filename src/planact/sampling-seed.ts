/**
 * Seeds for reproducible sampling: every generation of an episode gets a seed derived from the
 * episode's seed and where in the episode it happens (role, turn, act, tool round), so re-running
 * an episode with the same weights samples the same tokens, however requests are batched.
 * Pure and deterministic, so workflows can use it.
 */
import { fnv1a32 } from '../domain/rng';
import type { PlanActRole } from './episode-types';

/** Seed of episode `index` of rollout `rolloutId` in a run seeded `runSeed`. */
export function episodeSeed(runSeed: number, rolloutId: number | string, index: number): number {
  return fnv1a32(`episode:${runSeed}:${rolloutId}:${index}`);
}

/** Seed of one generation inside an episode. */
export function generationSeed(seed: number, role: PlanActRole, meta: { turn: number; actId?: string; step: number }): number {
  return fnv1a32(`gen:${seed}:${role}:${meta.turn}:${meta.actId ?? ''}:${meta.step}`);
}
