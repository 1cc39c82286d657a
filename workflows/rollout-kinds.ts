/**
 * The rollout table: rollout.kind -> how trainingRun runs one RL step's rollout and how it evaluates
 * the policy the kind trains. A new kind is a workflow of its own file plus one row here (and its
 * refusals, rows of src/config/refusals.ts); trainingRun never branches on the kind. Child workflow ids and types are those
 * the kinds always had, so recorded histories replay unchanged.
 */
import { executeChild } from '@temporalio/workflow';
import type { RunConfig } from '../src/config/schema';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import type { PolicyRef } from '../src/contracts/weights';
import type { RlEvalPoint, RlPoint } from '../src/contracts/training-run';
import type { WeightsInfo } from '../src/contracts/weights';
import type { EvaluateEpisodesInput } from '../activities/inference';
// Not the schema: importing it would build the config's zod schema at every workflow's start.
import { AGENT_COMMAND_DEFAULTS } from '../src/config/agent-defaults';
import { activityProxies } from './activity-proxies';
import { agentRollout } from './agent-rollout';
import { episodeLimits } from './rollout-episodes';
import { horizonRollout } from './horizon-rollout';
import { planActRollout } from './plan-act-rollout';
import { singleAgentRollout } from './single-agent-rollout';
import { chatRollout, chatSpecOf } from './chat-rollout';
import { chatProxies } from './activity-proxies';
import { treeRollout } from './tree-rollout';

export interface RolloutStep {
  runId: string;
  /** The RL step (the rollout id). */
  rlStep: number;
  /** Dynamic sampling's extra batches of new prompts: 0 for the first. */
  batch: number;
  config: RunConfig;
  policy: PolicyRef;
}

/** Held-out accuracy of some weights on the RL distribution, greedy and sampled. */
export type RlEvaluation = Omit<RlEvalPoint, 'step' | 'weightVersion'>;

/**
 * Which held-out problems an evaluation plays: validation (default: the curves, setting choices)
 * or test (each compared policy once, after training), with n sampled episodes per problem (pass@k).
 */
export interface EvalTarget {
  part: 'validation' | 'test';
  samplesPerProblem?: number;
}

/** A kind's own numbers in a step's record (RlPoint): tree counts, success per plan horizon. */
export type KindStepCounts = Pick<RlPoint, 'tree' | 'horizon'>;

/**
 * The test part each compared policy plays once after training: its size (0: no test evaluation,
 * the comparison reads the validation evaluations) and the target the kind's evaluate is given.
 */
export interface TestPart {
  size: number;
  target: EvalTarget;
}

export interface RolloutKind {
  /** One batch of the step's rollout, as a child workflow. */
  run(step: RolloutStep): Promise<RolloutSummary>;
  /** Whether dynamic sampling may draw more batches of new prompts (else the kind grows its groups itself). */
  batches: boolean;
  /** How trainingRun judges the policy this kind trains: held-out accuracy, greedy and sampled. */
  evaluate(cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): Promise<RlEvaluation>;
  /** The kind's own numbers of a step, read off its rollout summaries (absent: none). */
  stepCounts?(rollouts: RolloutSummary[]): KindStepCounts;
  /** The kind's test part (absent: the arithmetic task's test problems, pass@k when eval.passAtK > 1). */
  testPart?(cfg: RunConfig): TestPart;
}

/** The kind's own numbers of a step's rollouts (trainingRun's step record). */
export function stepCountsOf(cfg: RunConfig, rollouts: RolloutSummary[]): KindStepCounts {
  return ROLLOUT_KINDS[cfg.rollout.kind].stepCounts?.(rollouts) ?? {};
}

/** The test part a run's compared policies play (trainingRun's test evaluations). */
export function testPartOf(cfg: RunConfig): TestPart {
  return (
    ROLLOUT_KINDS[cfg.rollout.kind].testPart?.(cfg) ?? {
      size: cfg.task.rl.testProblems,
      target: { part: 'test', ...(cfg.eval.passAtK > 1 ? { samplesPerProblem: cfg.eval.passAtK } : {}) },
    }
  );
}

const sampledAtRlTemperature = (cfg: RunConfig) => (cfg.eval.sampled ? { sampled: { temperature: cfg.rl.temperature, topP: cfg.rl.topP } } : {});

/** The evaluateEpisodes input of a run config: its held-out problems, episode limits and sampling. */
export const episodeEvaluation = (cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): EvaluateEpisodesInput => ({
  weights,
  seed: cfg.seed,
  problems: target?.part === 'test' ? cfg.task.rl.testProblems : cfg.task.rl.evalProblems,
  difficulty: cfg.task.rl.difficulty ?? cfg.task.difficulty,
  limits: episodeLimits(cfg),
  maxNewTokens: cfg.eval.maxNewTokens,
  // pass@k samples whatever eval.sampled says: it is what samplesPerProblem asks for.
  ...(target?.samplesPerProblem ? { sampled: { temperature: cfg.rl.temperature, topP: cfg.rl.topP } } : sampledAtRlTemperature(cfg)),
  scheme: cfg.task.split,
  part: target?.part ?? 'validation',
  ...(target?.samplesPerProblem ? { samplesPerProblem: target.samplesPerProblem } : {}),
});

/** Whole arithmetic episodes on held-out problems of the RL distribution. */
const evaluateEpisodes = (cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): Promise<RlEvaluation> =>
  activityProxies(cfg.timeouts).inference.evaluateEpisodes(episodeEvaluation(cfg, weights, target));

/** Chat episodes (task.chat) on held-out problems of the RL distribution, on the embedded engine. */
const evaluateChatEpisodes = (cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): Promise<RlEvaluation> => {
  const e = episodeEvaluation(cfg, weights, target);
  return chatProxies(cfg.timeouts).evaluateChatEpisodes({
    chat: chatSpecOf(cfg),
    weights,
    seed: e.seed,
    problems: e.problems,
    difficulty: e.difficulty,
    scheme: e.scheme ?? 'expression',
    part: e.part ?? 'validation',
    maxTurns: cfg.rollout.maxTurns,
    maxNewTokens: e.maxNewTokens,
    ...(e.sampled ? { sampled: e.sampled } : {}),
    ...(e.samplesPerProblem ? { samplesPerProblem: e.samplesPerProblem } : {}),
  });
};

/** The task's own episodes: chat episodes in chat mode (task.chat), else arithmetic episodes. */
const evaluateTaskEpisodes = (cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): Promise<RlEvaluation> =>
  cfg.task.chat ? evaluateChatEpisodes(cfg, weights, target) : evaluateEpisodes(cfg, weights, target);

export const ROLLOUT_KINDS: Record<RunConfig['rollout']['kind'], RolloutKind> = {
  // Plan/Act episodes in shared mode: one policy plans and acts.
  'plan-act': {
    batches: true,
    evaluate: evaluateEpisodes,
    run: (s) =>
      executeChild(planActRollout, {
        workflowId: s.batch === 0 ? `${s.runId}/rollout-${s.rlStep}` : `${s.runId}/rollout-${s.rlStep}-b${s.batch}`,
        args: [{ runId: s.runId, rolloutId: s.rlStep, ...(s.batch > 0 ? { batch: s.batch } : {}), mode: 'shared', config: s.config, policies: { planner: s.policy, actor: s.policy } }],
      }),
  },
  // Offline tree search on the actor's task; the leaves of a root are its GRPO group.
  tree: {
    batches: false,
    evaluate: evaluateEpisodes,
    // One tree per step (no extra batches): its counts are the step's.
    stepCounts: (rollouts) => (rollouts[0]?.tree ? { tree: rollouts[0].tree } : {}),
    run: (s) => executeChild(treeRollout, { workflowId: `${s.runId}/tree-rollout-${s.rlStep}`, args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, policy: s.policy }] }),
  },
  // Grid-world episodes with plan horizons; GRPO groups by horizon.groupBy.
  horizon: {
    batches: false,
    // Held-out layouts, each played once per horizon of the pattern (pass@k does not apply: eval.passAtK is refused for grid runs).
    evaluate: (cfg, weights, target) =>
      activityProxies(cfg.timeouts).inference.evaluateHorizons({
        weights,
        seed: cfg.seed,
        layouts: target?.part === 'test' ? cfg.task.grid!.testLayouts : cfg.task.evalProblems,
        grid: cfg.task.grid!,
        horizon: cfg.horizon!,
        // Without a test part (runs recorded before it) the evaluations play the whole held-out split.
        ...(cfg.task.grid!.testLayouts > 0 ? { part: target?.part ?? 'validation' } : {}),
        ...sampledAtRlTemperature(cfg),
      }),
    // Held-out test layouts, each played once per horizon (pass@k does not apply).
    testPart: (cfg) => ({ size: cfg.task.grid!.testLayouts, target: { part: 'test' } }),
    // One batch of layouts per step: its success per horizon is the step's.
    stepCounts: (rollouts) => (rollouts[0]?.horizon ? { horizon: rollouts[0].horizon } : {}),
    run: (s) => executeChild(horizonRollout, { workflowId: `${s.runId}/horizon-rollout-${s.rlStep}`, args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, policy: s.policy }] }),
  },
  // The standard single-agent rollout: the policy gets the whole problem, may call the calculator and answers.
  // In chat mode (task.chat) the same episode as a chat conversation with the calc tool.
  standard: {
    batches: true,
    evaluate: evaluateTaskEpisodes,
    run: (s) =>
      s.config.task.chat
        ? executeChild(chatRollout, {
            workflowId: s.batch === 0 ? `${s.runId}/chat-rollout-${s.rlStep}` : `${s.runId}/chat-rollout-${s.rlStep}-b${s.batch}`,
            args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, policy: s.policy, reason: 'task.chat', ...(s.batch > 0 ? { batch: s.batch } : {}) }],
          })
        : executeChild(singleAgentRollout, {
        workflowId: s.batch === 0 ? `${s.runId}/standard-rollout-${s.rlStep}` : `${s.runId}/standard-rollout-${s.rlStep}-b${s.batch}`,
        args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, policy: s.policy, reason: 'rollout.kind: standard', ...(s.batch > 0 ? { batch: s.batch } : {}) }],
      }),
  },
  // An outside agent's episodes, recorded by a gateway on the step's weights (rollout.agent).
  // Evaluated as the main job's policy is (the agent itself is not run): in chat mode, chat episodes
  // (allowed for agents since chat mode was; no history recorded before has task.chat here).
  agent: {
    batches: false,
    evaluate: evaluateTaskEpisodes,
    // With inference.engine openai the agent plays on the synced server, through the tools worker's recording proxy.
    run: (s) =>
      executeChild(agentRollout, {
        workflowId: `${s.runId}/agent-rollout-${s.rlStep}`,
        args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, agent: { ...(s.config.rollout.agent ?? { command: [...AGENT_COMMAND_DEFAULTS.command], timeoutSec: AGENT_COMMAND_DEFAULTS.timeoutSec }), weights: s.policy.weights, ...(s.policy.remote ? { remote: s.policy.remote } : {}) } }],
      }),
  },
};
