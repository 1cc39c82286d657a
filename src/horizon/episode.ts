/**
 * One grid-world episode with a plan horizon H (docs/grid-horizons.md): plan H moves, execute them
 * numActionChunks at a time from the plan's offset, replan from the current observation when the
 * offset reaches H, until the goal or the step budget. The driver is pure: the workflow passes
 * deps that call activities (generate on the inference queue, the environment on the tools queue),
 * evaluation passes the engine and the environment directly, so both run the same episode.
 */
import type { ChunkOutcome } from '../tasks/grid/env';
import { gridObservation } from '../tasks/grid/formats';
import type { Cell, GridLayout } from '../tasks/grid/layout';
import type { Move } from '../tasks/grid/moves';
import { advance, needsReplan, newPlan, nextChunk, parsePlan, type PlanCache, type PlanError } from './plan';
import { episodeReward, type PlanRewardOptions } from './reward';

export interface HorizonEpisodeOptions extends PlanRewardOptions {
  horizon: number;
  numActionChunks: number;
  /** Moves the episode may execute in all. */
  maxSteps: number;
}

export interface PlanOutput<Ref> {
  text: string;
  /** Where the generation's tokens are (the workflow's blob reference); opaque here. */
  ref: Ref;
}

export interface HorizonEpisodeDeps<Ref> {
  /** The policy's completion of `prompt`, at most `horizon` tokens. */
  plan(prompt: string, horizon: number, planIndex: number): Promise<PlanOutput<Ref>>;
  /** Sends a chunk of moves to the environment. */
  execute(layout: GridLayout, from: Cell, moves: Move[], chunkIndex: number): Promise<ChunkOutcome>;
}

export interface ChunkRecord {
  planIndex: number;
  /** Offset of the chunk's first move in its plan. */
  chunkOffset: number;
  /** Moves sent; `executed` of them ran (fewer when the goal was reached inside the chunk). */
  moves: string;
  executed: number;
  from: Cell;
  to: Cell;
  bumps: number;
}

export interface PlanRecord<Ref> {
  planIndex: number;
  horizon: number;
  /** The observation the plan was written from. */
  at: Cell;
  text: string;
  ref: Ref;
  /** Set when the text was not a plan of H moves: the episode ended there. */
  error?: PlanError;
}

export interface HorizonEpisodeResult<Ref> {
  layoutId: string;
  horizon: number;
  success: boolean;
  steps: number;
  plans: Array<PlanRecord<Ref>>;
  chunks: ChunkRecord[];
  reward: { task: number; plan: number; total: number };
  /** Why it ended without success: 'bad-plan', or 'step-budget'. */
  failure?: 'bad-plan' | 'step-budget';
}

export async function runHorizonEpisode<Ref>(layout: GridLayout, opts: HorizonEpisodeOptions, deps: HorizonEpisodeDeps<Ref>): Promise<HorizonEpisodeResult<Ref>> {
  const plans: Array<PlanRecord<Ref>> = [];
  const chunks: ChunkRecord[] = [];
  let at = layout.start;
  let steps = 0;
  let cache: PlanCache | null = null;
  let success = false;
  let failure: HorizonEpisodeResult<Ref>['failure'];
  while (steps < opts.maxSteps) {
    if (needsReplan(cache)) {
      const planIndex = plans.length + 1;
      const out = await deps.plan(gridObservation(layout, at, opts.horizon), opts.horizon, planIndex);
      const parsed = parsePlan(out.text, opts.horizon);
      plans.push({ planIndex, horizon: opts.horizon, at, text: out.text, ref: out.ref, ...(parsed.ok ? {} : { error: parsed.error }) });
      if (!parsed.ok) {
        failure = 'bad-plan';
        break;
      }
      cache = newPlan(planIndex, opts.horizon, parsed.moves);
    }
    const current: PlanCache = cache!;
    const chunk = nextChunk(current, opts.numActionChunks, opts.maxSteps - steps);
    const outcome = await deps.execute(layout, at, chunk.moves, chunks.length + 1);
    chunks.push({
      planIndex: current.planIndex,
      chunkOffset: chunk.offset,
      moves: chunk.moves.join(''),
      executed: outcome.executed,
      from: at,
      to: outcome.position,
      bumps: outcome.bumps,
    });
    cache = advance(current, chunk.moves.length);
    at = outcome.position;
    steps += outcome.executed;
    if (outcome.reachedGoal) {
      success = true;
      break;
    }
  }
  if (!success && failure === undefined) failure = 'step-budget';
  return {
    layoutId: layout.id,
    horizon: opts.horizon,
    success,
    steps,
    plans,
    chunks,
    reward: episodeReward(success, opts.horizon, opts),
    ...(failure ? { failure } : {}),
  };
}
