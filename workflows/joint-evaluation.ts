/**
 * jointEvaluation: dual mode's two trained policies judged together, as the task judges them: whole
 * Plan/Act episodes on held-out problems of the RL distribution, the planner played by one policy
 * and every act by the other (the jobs' own evaluations read each role with oracle context). Also
 * the frozen-planner control (a planner run's untrained start with a trained actor) and shared mode
 * (one run as both), so the three are measured alike:
 *   temporal workflow start --task-queue durable-rl-orchestration --type jointEvaluation --workflow-id joint-1 \
 *     --input '{"configFile":"configs/plan-act-dual-rl.yaml","planner":{"fromRun":"<planner job id>"},"actor":{"fromRun":"<actor job id>"},"part":"test"}'
 */
import type { RunConfigInput } from '../src/config/schema';
import type { WeightsInfo } from '../src/contracts/weights';
import type { EpisodeAccuracyReport } from '../src/eval/episode-accuracy';
import { activityProxies, planActProxies } from './activity-proxies';
import { readConfig } from './plan-act-job/input';
import { episodeEvaluation } from './rollout-kinds';

/** Where a role's weights come from: a run's newest published weights, or given. */
export type WeightsSource = { fromRun: string } | { weights: WeightsInfo };

export interface JointEvaluationInput {
  config?: RunConfigInput;
  configFile?: string;
  planner: WeightsSource;
  actor: WeightsSource;
  /** validation (default) or test problems (task.rl.evalProblems / testProblems). */
  part?: 'validation' | 'test';
}

export interface JointEvaluationResult extends EpisodeAccuracyReport {
  planner: WeightsInfo;
  actor: WeightsInfo;
  part: 'validation' | 'test';
}

export async function jointEvaluation(input: JointEvaluationInput): Promise<JointEvaluationResult> {
  const cfg = await readConfig(input);
  const { jobs } = planActProxies(cfg.timeouts);
  const weightsOf = (s: WeightsSource): Promise<WeightsInfo> => ('weights' in s ? Promise.resolve(s.weights) : jobs.resolveRunWeights({ runId: s.fromRun }));
  const [planner, actor] = await Promise.all([weightsOf(input.planner), weightsOf(input.actor)]);
  const part = input.part ?? 'validation';
  const target = { part, ...(part === 'test' && cfg.eval.passAtK > 1 ? { samplesPerProblem: cfg.eval.passAtK } : {}) };
  const report = await activityProxies(cfg.timeouts).inference.evaluateEpisodes({ ...episodeEvaluation(cfg, planner, target), actorWeights: actor });
  return { planner, actor, part, ...report };
}
