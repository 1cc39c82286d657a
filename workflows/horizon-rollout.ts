/**
 * horizonRollout: one RL step's grid-world episodes (docs/grid-horizons.md). rl.promptsPerStep training
 * layouts, rl.groupSize episodes each (a layout's episodes are its GRPO group, or with
 * horizon.groupBy 'layout-horizon' those at one H); episode i of the
 * batch plans with H = horizon.actionHorizonsPattern[i mod length]. Each episode is a
 * horizonEpisode child; their executed chunks become samples (one per chunk, trained on its slice
 * of the plan); the per-H success counts go to the summary's metrics only.
 */
import { executeChild, log, workflowInfo } from '@temporalio/workflow';
import { assignHorizons } from '../src/horizon/assign';
import { successByHorizon } from '../src/horizon/metrics';
import { generateLayouts } from '../src/tasks/grid/layout';
import { fnv1a32 } from '../src/domain/rng';
import { episodeSeed } from '../src/planact/sampling-seed';
import { gridProxies } from './activity-proxies';
import { rolloutSummary } from './rollout-summary';
import { withRecordedDefaults } from '../src/config/recorded';
import { horizonEpisode } from './horizon-episode';
import type { HorizonEpisodeDigest, HorizonEpisodeInput, HorizonRolloutInput } from './horizon-types';
import { workflowNow } from './clock';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';

export async function horizonRollout(input: HorizonRolloutInput): Promise<RolloutSummary> {
  const cfg = withRecordedDefaults(input.config);
  const grid = cfg.task.grid!;
  const horizon = cfg.horizon!;
  const started = workflowNow();
  const self = workflowInfo().workflowId;
  const { writeHorizonSamples } = gridProxies(cfg.timeouts);
  const layouts = generateLayouts({ seed: fnv1a32(`grid-rollout:${cfg.seed}:${input.rolloutId}`), count: cfg.rl.promptsPerStep, split: 'train', shape: grid });
  const size = layouts.length * cfg.rl.groupSize;
  const horizons = assignHorizons(horizon.actionHorizonsPattern, size);
  const groupBy = horizon.groupBy;
  const inputs: HorizonEpisodeInput[] = Array.from({ length: size }, (_, i) => {
    const p = Math.floor(i / cfg.rl.groupSize);
    return {
      episodeId: `${input.runId}/r${input.rolloutId}/e${i}`,
      groupId: groupBy === 'layout-horizon' ? `r${input.rolloutId}-p${p}-h${horizons[i]!}` : `r${input.rolloutId}-p${p}`,
      layoutId: layouts[p]!.id,
      horizon: horizons[i]!,
      numActionChunks: horizon.numActionChunks,
      maxSteps: grid.maxSteps,
      usePlanReward: horizon.usePlanReward,
      planRewardCoef: horizon.planRewardCoef,
      baseH: horizon.baseH,
      policy: input.policy,
      sampling: { temperature: cfg.rl.temperature, topP: cfg.rl.topP },
      seed: episodeSeed(cfg.seed, input.rolloutId, i),
      timeouts: cfg.timeouts,
    };
  });
  const episodes: HorizonEpisodeDigest[] = await Promise.all(inputs.map((e, i) => executeChild(horizonEpisode, { workflowId: `${self}/ep-${i}`, args: [e] })));
  const actor = await writeHorizonSamples({
    episodes: episodes.map((e) => ({
      episodeId: e.episodeId,
      groupId: e.groupId,
      reward: e.reward.total,
      plans: e.plans.map((p) => ({
        planIndex: p.planIndex,
        horizon: e.horizon,
        tokens: p.tokens,
        weightVersion: p.weightVersion,
        // The chunks run from this plan; a plan that was not H moves ran none and is trained whole.
        ...(p.error ? {} : { chunks: e.chunks.filter((c) => c.planIndex === p.planIndex).map(({ chunkOffset, executed }) => ({ chunkOffset, executed })) }),
      })),
    })),
  });
  const rows: EpisodeRow[] = episodes.map((e) => ({
    episodeId: e.episodeId,
    groupId: e.groupId,
    expression: `${e.layoutId} H=${e.horizon}`,
    reward: e.reward.total,
    answer: e.success ? `goal in ${e.steps}` : null,
    ...(e.failure ? { failure: e.failure } : {}),
  }));
  const byHorizon = successByHorizon(episodes);
  log.info('horizon rollout', { rolloutId: input.rolloutId, episodes: episodes.length, byHorizon: byHorizon.map((h) => `H${h.horizon} ${h.success}/${h.total}`).join(' ') });
  return rolloutSummary({
    rolloutId: input.rolloutId,
    mode: 'single',
    rows,
    answered: episodes.filter((e) => e.success).length,
    failureCodes: episodes.flatMap((e) => (e.failure ? [e.failure] : [])),
    samples: { single: actor },
    durationMs: workflowNow() - started,
    metrics: { generations: episodes.reduce((n, e) => n + e.plans.length, 0) },
    horizon: byHorizon,
  });
}
