/**
 * horizonEpisode: one grid-world episode with plan horizon H, as its own workflow so it reads in
 * the Web UI as what happened: each plan is a generate activity (the observation in, H moves out),
 * each chunk a gridChunk activity on the tools queue (moves in, where the agent went out), replans
 * follow when a plan's offset reaches H, and the result carries the reward (task + plan reward).
 * The memo shows the plan and chunk counts as the episode goes. The episode logic is
 * src/horizon/episode.ts; this file only binds it to activities.
 */
import { upsertMemo } from '@temporalio/workflow';
import type { BlobRef } from '../src/domain/types';
import { runHorizonEpisode } from '../src/horizon/episode';
import { layoutFromId } from '../src/tasks/grid/layout';
import { fnv1a32 } from '../src/domain/rng';
import { generateProxy, gridProxies } from './activity-proxies';
import type { HorizonEpisodeDigest, HorizonEpisodeInput } from './horizon-types';

interface PlanRef {
  tokens: BlobRef;
  weightVersion: number;
}

export async function horizonEpisode(input: HorizonEpisodeInput): Promise<HorizonEpisodeDigest> {
  const generate = generateProxy(input.timeouts, input.policy.inferenceQueue);
  const { gridChunk } = gridProxies(input.timeouts);
  const layout = layoutFromId(input.layoutId);
  let chunksRun = 0;
  const result = await runHorizonEpisode<PlanRef>(layout, { ...input }, {
    plan: async (prompt, horizon, planIndex) => {
      upsertMemo({ plans: planIndex, chunks: chunksRun });
      const out = await generate({
        weights: input.policy.weights,
        role: 'single',
        prompt,
        params: { maxNewTokens: horizon, temperature: input.sampling.temperature, topP: input.sampling.topP, stop: [], seed: fnv1a32(`${input.seed}:plan:${planIndex}`) },
      });
      return { text: out.text, ref: { tokens: out.tokens, weightVersion: out.weightVersion } };
    },
    execute: async (_layout, from, moves, chunkIndex) => {
      chunksRun = chunkIndex;
      return gridChunk({ layoutId: input.layoutId, from, moves: moves.join('') });
    },
  });
  upsertMemo({ plans: result.plans.length, chunks: result.chunks.length, success: result.success, reward: result.reward.total });
  return {
    episodeId: input.episodeId,
    groupId: input.groupId,
    layoutId: input.layoutId,
    horizon: result.horizon,
    success: result.success,
    steps: result.steps,
    reward: result.reward,
    ...(result.failure ? { failure: result.failure } : {}),
    plans: result.plans.map((p) => ({
      planIndex: p.planIndex,
      at: p.at,
      text: p.text,
      tokens: p.ref.tokens,
      weightVersion: p.ref.weightVersion,
      ...(p.error ? { error: p.error } : {}),
    })),
    chunks: result.chunks,
  };
}
