/**
 * Held-out evaluation of the grid world with plan horizons: every held-out layout is played once
 * per horizon of the pattern (the same layouts for every H, so the rates compare), greedily and,
 * optionally, sampling at the RL temperature with a seed per episode. Success rate per H, and over
 * all episodes with its standard error: how RL on the grid world is judged.
 */
import type { RunConfig } from '../config/schema';
import { runHorizonEpisode, successByHorizon, type HorizonEpisodeResult, type HorizonSuccess } from '../horizon';
import { fnv1a32 } from '../domain/rng';
import { executeChunk, heldOutLayouts, type GridLayout, type HeldOutPart } from '../tasks/grid';
import type { CompletionSource } from './arith-eval';
import { accuracyOf, type Accuracy } from './episode-accuracy';

export interface HorizonEvalOptions {
  seed: number;
  layouts: number;
  grid: NonNullable<RunConfig['task']['grid']>;
  horizon: NonNullable<RunConfig['horizon']>;
  /** The held-out part to play (task.grid.testLayouts > 0); absent: the whole held-out split, as runs recorded before the test split. */
  part?: HeldOutPart;
  sampled?: { temperature: number; topP: number };
  onEpisode?: () => void;
}

export interface HorizonEvalReport {
  greedy: Accuracy;
  sampled?: Accuracy;
  /** Greedy success rate per plan horizon. */
  byHorizon: HorizonSuccess[];
  sampledByHorizon?: HorizonSuccess[];
  failures: Record<string, number>;
  example: string;
}

export async function evaluateHorizonPolicy(engine: CompletionSource, opts: HorizonEvalOptions): Promise<HorizonEvalReport> {
  const layouts = heldOutLayouts(opts.seed, opts.layouts, opts.grid, opts.part);
  const horizons = [...new Set(opts.horizon.actionHorizonsPattern)];
  const play = async (layout: GridLayout, h: number, sampling?: HorizonEvalOptions['sampled']): Promise<HorizonEpisodeResult<null>> => {
    const result = await runHorizonEpisode(
      layout,
      { ...opts.horizon, horizon: h, maxSteps: opts.grid.maxSteps },
      {
        plan: async (prompt, horizon, planIndex) => {
          const seed = fnv1a32(`eval:${opts.seed}:${layout.id}:${h}:${planIndex}`);
          const params = sampling
            ? { maxNewTokens: horizon, temperature: sampling.temperature, topP: sampling.topP, stop: [], seed }
            : { maxNewTokens: horizon, temperature: 0, topP: 1, stop: [] };
          return { text: (await engine.complete(prompt, params)).text, ref: null };
        },
        execute: async (l, from, moves) => executeChunk(l, from, moves),
      },
    );
    opts.onEpisode?.();
    return result;
  };
  const runAll = (sampling?: HorizonEvalOptions['sampled']) => Promise.all(layouts.flatMap((l) => horizons.map((h) => play(l, h, sampling))));
  const [greedy, sampled] = await Promise.all([runAll(), opts.sampled ? runAll(opts.sampled) : Promise.resolve(undefined)]);
  const failures: Record<string, number> = {};
  for (const e of greedy) if (e.failure) failures[e.failure] = (failures[e.failure] ?? 0) + 1;
  const first = greedy[0];
  const rate = (xs: HorizonEpisodeResult<null>[]) => accuracyOf(xs.filter((e) => e.success).length, xs.length);
  return {
    greedy: rate(greedy),
    ...(sampled ? { sampled: rate(sampled), sampledByHorizon: successByHorizon(sampled) } : {}),
    byHorizon: successByHorizon(greedy),
    failures,
    example: first ? `${first.layoutId} H=${first.horizon}: plans ${first.plans.map((p) => p.text).join(' | ')}; ${first.success ? 'reached the goal' : first.failure} in ${first.steps} moves` : '',
  };
}
