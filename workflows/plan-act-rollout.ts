/**
 * planActRollout: the episodes of one rollout (promptsPerStep prompts x groupSize), all in flight
 * at once, one child workflow per GRPO group (planActEpisodes) or per episode (planActEpisode, with
 * episodesPerWorkflow 1); then one sample set per role.
 *
 * Shared mode: one policy plays both roles (policies.planner === policies.actor), and trainingRun or
 * a shared planActJob runs this per step. Dual mode: the rollout session runs it with the planner
 * job's and the actor job's weights and splits the sample sets between them.
 */
import { ChildWorkflowCancellationType, executeChild, log, patched, workflowInfo } from '@temporalio/workflow';
import type { AgentRole } from '../src/domain/types';
import { episodeSeed } from '../src/planact/sampling-seed';
import { addToolMetrics, emptyToolMetrics } from './tool-metrics';
import { episodeLimits, rolloutProblems } from './rollout-episodes';
import { mean } from './web-ui-format';
import { workflowNow } from './clock';
import { planActEpisode, planActEpisodes } from './plan-act-episode';
import { planActProxies } from './activity-proxies';
import { rolloutSummary } from './rollout-summary';
import type { EpisodeRow, RolloutSummary } from '../src/contracts/rollout-summary';
import type { PlanActEpisodeDigest, PlanActEpisodeInput, PlanActGroupResult } from '../src/contracts/plan-act-episode';
import type { PlanActRolloutInput } from '../src/contracts/rollout-inputs';
import type { SampleSetRef, SampleSets } from '../src/contracts/sample-set';

export async function planActRollout(input: PlanActRolloutInput): Promise<RolloutSummary> {
  return runPlanActRollout(input);
}

/**
 * The rollout, in whichever workflow calls it: the rollout session runs it inline, which saves a
 * child workflow's round trips between the barrier and the first planner request.
 */
export async function runPlanActRollout(
  input: PlanActRolloutInput,
  opts: { cancellationType?: ChildWorkflowCancellationType } = {},
): Promise<RolloutSummary> {
  const { config: cfg } = input;
  const started = workflowNow();
  const { samples } = planActProxies(cfg.timeouts);
  const batch = input.batch ?? 0;
  const problems = rolloutProblems(cfg, input.rolloutId, batch);
  const tag = batch === 0 ? `r${input.rolloutId}` : `r${input.rolloutId}b${batch}`;
  const self = workflowInfo().workflowId;

  const inputs = problems.map(
    (p): PlanActEpisodeInput => ({
      runId: input.runId,
      episodeId: `${input.runId}/${tag}/e${p.index}`,
      expression: p.expression,
      groupId: p.groupId,
      policies: input.policies,
      limits: episodeLimits(cfg),
      sampling: { temperature: cfg.rl.temperature, topP: cfg.rl.topP },
      seed: episodeSeed(cfg.seed, batch === 0 ? input.rolloutId : tag, p.index),
      timeouts: cfg.timeouts,
      timeline: cfg.timeline,
      // Absent in configs recorded before the key (outcome credit).
      ...(cfg.rollout.plannerCredit === 'correct-results' ? { plannerCredit: 'correct-results' as const } : {}),
      // Absent in configs recorded before the key (batched).
      ...(cfg.rollout.batchRequests !== true ? { batchRequests: cfg.rollout.batchRequests } : {}),
    }),
  );
  const per = Math.max(1, input.episodesPerWorkflow ?? cfg.rollout.episodesPerWorkflow ?? defaultEpisodesPerWorkflow(cfg));
  const chunks = Array.from({ length: Math.ceil(inputs.length / per) }, (_, i) => inputs.slice(i * per, (i + 1) * per));
  const groups = await Promise.all(
    chunks.map((chunk, i) =>
      per === 1
        ? executeChild(planActEpisode, { workflowId: `${self}/ep-${i}`, args: [chunk[0]!], ...opts }).then(
            ({ samples: sets, ...episode }): PlanActGroupResult => ({ episodes: [episode], samples: sets }),
          )
        : executeChild(planActEpisodes, { workflowId: `${self}/episodes-${i}`, args: [chunk], ...opts }),
    ),
  );
  const groupOf = new Map(inputs.map((i) => [i.episodeId, i.groupId]));
  const episodes = groups.flatMap((g) => g.episodes).map((e) => ({ ...e, groupId: groupOf.get(e.episodeId) }));

  const merged: SampleSets = {};
  await Promise.all(
    (['planner', 'actor', 'single'] as AgentRole[]).map(async (role) => {
      const sets = groups.map((g) => g.samples[role]).filter((s): s is SampleSetRef => s !== undefined);
      if (sets.length === 1) merged[role] = sets[0]!;
      else if (sets.length > 1) merged[role] = await samples.concatSampleSets({ sets });
    }),
  );
  const summary = summarize(input.rolloutId, input.mode, episodes, merged, workflowNow() - started);
  log.info('plan/act rollout', { rolloutId: input.rolloutId, mode: input.mode, episodes: summary.episodes, meanReward: summary.meanReward });
  return summary;
}

export function summarize(
  rolloutId: number,
  mode: RolloutSummary['mode'],
  episodes: Array<PlanActEpisodeDigest & { groupId?: string | undefined }>,
  samples: SampleSets,
  durationMs: number,
): RolloutSummary {
  const rows: EpisodeRow[] = episodes.map((e) => ({
    episodeId: e.episodeId,
    ...(e.groupId !== undefined ? { groupId: e.groupId } : {}),
    expression: e.expression,
    reward: e.reward,
    answer: e.answer,
    ...(e.failure ? { failure: e.failure.code } : {}),
    ...(e.plannerNotTrained ? { plannerNotTrained: true as const } : {}),
  }));
  return rolloutSummary({
    rolloutId,
    mode,
    rows,
    answered: episodes.filter((e) => e.status === 'answered').length,
    failureCodes: episodes.flatMap((e) => (e.failure ? [e.failure.code] : [])),
    samples,
    durationMs,
    metrics: {
      acts: episodes.reduce((n, e) => n + e.metrics.acts, 0),
      generations: episodes.reduce((n, e) => n + e.metrics.generations, 0),
      maxConcurrentActs: Math.max(0, ...episodes.map((e) => e.metrics.maxConcurrentActs)),
      tools: episodes.reduce((m, e) => addToolMetrics(m, e.metrics.tools), emptyToolMetrics()),
      meanEpisodeMs: Math.round(mean(episodes.map((e) => e.metrics.episodeMs))),
    },
  });
}

/** The patch after which 'local' rollouts put LOCAL_EPISODES_PER_WORKFLOW episodes to a child workflow by default. */
export const LOCAL_EPISODES_PER_WORKFLOW_PATCH = 'local-episodes-per-workflow';
/** Exchanges coalesce the replies of one workflow's episodes: the more of them, the fewer exchanges (docs/benchmarks.md). */
export const LOCAL_EPISODES_PER_WORKFLOW = 256;

/**
 * Episodes per child workflow when rollout.episodesPerWorkflow is absent (as in every config
 * recorded before the key): one GRPO group, or with rollout.batchRequests 'local', up to 256.
 */
function defaultEpisodesPerWorkflow(cfg: PlanActRolloutInput['config']): number {
  return cfg.rollout.batchRequests === 'local' && patched(LOCAL_EPISODES_PER_WORKFLOW_PATCH) ? LOCAL_EPISODES_PER_WORKFLOW : cfg.rl.groupSize;
}
