/** The episodes of a rollout: which problems, in which GRPO groups, under which limits. */
import type { RunConfig } from '../src/config/schema';
import type { EpisodeLimits } from '../src/planact/episode-types';
import { drawProblems } from '../src/tasks/arith/splits';
import { splitSchemeOf } from '../src/config/recorded';
import { fnv1a32 } from '../src/domain/rng';

export interface RolloutProblem {
  index: number;
  expression: string;
  groupId: string;
}

/**
 * The episodes of rollout N: promptsPerStep training problems, each repeated groupSize times (one
 * GRPO group per prompt). Pure and seeded by (seed, rollout id), so both jobs of a dual-mode rollout,
 * the session and a fallback all see the same problems.
 */
export function rolloutProblems(cfg: RunConfig, rolloutId: number, batch = 0): RolloutProblem[] {
  // Batch 0 keeps the seed it always had, so rollouts recorded before batches existed replay.
  const tag = batch === 0 ? '' : `:b${batch}`;
  // RL's prompts are fresh problems with no demonstration ('rl'; task.split expression: the one training pool).
  const problems = drawProblems({
    seed: fnv1a32(`rollout:${cfg.seed}:${rolloutId}${tag}`),
    count: cfg.rl.promptsPerStep,
    scheme: splitSchemeOf(cfg.task),
    part: 'rl',
    // RL's own distribution when the config names one (task.rl.difficulty), else the SFT one.
    difficulty: cfg.task.rl?.difficulty ?? cfg.task.difficulty,
  });
  return problems.flatMap((p, i) =>
    Array.from({ length: cfg.rl.groupSize }, (_, g) => ({
      index: i * cfg.rl.groupSize + g,
      expression: p.expression,
      groupId: batch === 0 ? `r${rolloutId}-p${i}` : `r${rolloutId}b${batch}-p${i}`,
    })),
  );
}

export function episodeLimits(cfg: RunConfig): EpisodeLimits {
  return {
    maxTurns: cfg.rollout.maxTurns,
    maxActsPerTurn: cfg.rollout.maxActsPerTurn,
    maxToolCallsPerAct: cfg.rollout.maxToolCallsPerAct,
    plannerMaxNewTokens: cfg.rl.maxNewTokens,
    actorMaxNewTokens: cfg.rl.maxNewTokens,
  };
}
