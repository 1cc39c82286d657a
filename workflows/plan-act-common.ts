/** Small pieces the Plan/Act workflows share: clock, problems of a rollout, limits, typed failures. */
import { CancellationScope, isCancellation } from '@temporalio/workflow';
import type { RunConfig } from '../src/config/schema';
import type { EpisodeLimits } from '../src/planact/episode-types';
import { generateProblems } from '../src/tasks/arith/problem';
import { fnv1a32 } from '../src/domain/rng';
import type { ToolMetrics } from '../src/contracts/plan-act';

/**
 * Workflow time in ms. Inside a workflow, Date is pinned to the start of the current workflow task
 * and replays identically, so durations measured with it are deterministic.
 */
export function workflowNow(): number {
  return new Date().getTime();
}

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
  const problems = generateProblems({
    seed: fnv1a32(`rollout:${cfg.seed}:${rolloutId}${tag}`),
    count: cfg.rl.promptsPerStep,
    split: 'train',
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

/** Long model text cut for the Web UI; the full text stays in the token blobs. */
export function preview(text: string, max = 240): string {
  return text.length > max ? `${text.slice(0, max)}... (${text.length} chars)` : text;
}

export function emptyToolMetrics(): ToolMetrics {
  return { calls: 0, failures: 0, retries: 0, ms: 0 };
}

export function addToolMetrics(a: ToolMetrics, b: ToolMetrics): ToolMetrics {
  return { calls: a.calls + b.calls, failures: a.failures + b.failures, retries: a.retries + b.retries, ms: a.ms + b.ms };
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1e4) / 1e4;
}

/**
 * Runs fn in a scope cancelled after `ms`. Tells a timeout apart from a cancellation of the caller
 * (the caller's scope is then cancelled too, and the cancellation is rethrown).
 */
export async function withDeadline<T>(ms: number, fn: () => Promise<T>): Promise<{ timedOut: false; value: T } | { timedOut: true }> {
  try {
    return { timedOut: false, value: await CancellationScope.withTimeout(ms, fn) };
  } catch (err) {
    if (isCancellation(err) && !CancellationScope.current().consideredCancelled) return { timedOut: true };
    throw err;
  }
}
