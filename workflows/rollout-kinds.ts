/**
 * The rollout table: rollout.kind -> how trainingRun runs one RL step's rollout, how it evaluates
 * the policy the kind trains, and which configs it refuses. A new kind is a workflow of its own file
 * plus one row here; trainingRun never branches on the kind. Child workflow ids and types are those
 * the kinds always had, so recorded histories replay unchanged.
 */
import { executeChild } from '@temporalio/workflow';
import type { RunConfig } from '../src/config/schema';
import type { RolloutSummary } from '../src/contracts/plan-act';
import type { PolicyRef } from '../src/contracts/weights';
import type { RlEvalPoint } from '../src/contracts/training-run';
import type { WeightsInfo } from '../src/contracts/weights';
import type { EvaluateEpisodesInput } from '../activities/inference';
import { AgentCommandSchema } from '../src/config/schema';
import { activityProxies } from './activity-proxies';
import { agentRollout } from './agent-rollout';
import { episodeLimits } from './plan-act-common';
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

/** A config key a kind cannot honour, named. */
export interface RolloutRefusal {
  path: string;
  message: string;
}

export interface RolloutKind {
  /** One batch of the step's rollout, as a child workflow. */
  run(step: RolloutStep): Promise<RolloutSummary>;
  /** Whether dynamic sampling may draw more batches of new prompts (else the kind grows its groups itself). */
  batches: boolean;
  /** Configs this kind cannot run, named; undefined when it can. */
  check?(cfg: RunConfig): RolloutRefusal | undefined;
  /** How trainingRun judges the policy this kind trains: held-out accuracy, greedy and sampled. */
  evaluate(cfg: RunConfig, weights: WeightsInfo, target?: EvalTarget): Promise<RlEvaluation>;
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

const noBatches = (kind: string, how: string) => (cfg: RunConfig): RolloutRefusal | undefined =>
  cfg.rl.dynamicSampling.enabled ? { path: 'rl.dynamicSampling.enabled', message: `dynamic sampling draws more Plan/Act batches; a ${kind} rollout ${how}` } : undefined;

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
    check: noBatches('tree', 'grows its groups by expansion instead (tree.*)'),
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
    check: (cfg) =>
      noBatches('grid-world', 'plays a fixed set of layouts per step')(cfg) ??
      (cfg.inference.engine === 'openai' ? { path: 'rollout.kind', message: 'grid-world (horizon) episodes generate on the embedded engine only; use inference.engine: embedded' } : undefined),
    run: (s) => executeChild(horizonRollout, { workflowId: `${s.runId}/horizon-rollout-${s.rlStep}`, args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, policy: s.policy }] }),
  },
  // The standard single-agent rollout: the policy gets the whole problem, may call the calculator and answers.
  // In chat mode (task.chat) the same episode as a chat conversation with the calc tool.
  standard: {
    batches: true,
    evaluate: (cfg, weights, target) => (cfg.task.chat ? evaluateChatEpisodes(cfg, weights, target) : evaluateEpisodes(cfg, weights, target)),
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
  agent: {
    batches: false,
    evaluate: evaluateEpisodes,
    check: (cfg) =>
      noBatches('agent', 'plays one batch of problems per step')(cfg) ??
      (cfg.inference.engine === 'openai'
        ? { path: 'rollout.kind', message: "agent episodes are served by the tools workers' gateway on the embedded engine; use inference.engine: embedded (npm run gateway -- --upstream records an agent on vLLM)" }
        : undefined),
    run: (s) =>
      executeChild(agentRollout, {
        workflowId: `${s.runId}/agent-rollout-${s.rlStep}`,
        args: [{ runId: s.runId, rolloutId: s.rlStep, config: s.config, agent: { ...(s.config.rollout.agent ?? AgentCommandSchema.parse({})), weights: s.policy.weights } }],
      }),
  },
};
