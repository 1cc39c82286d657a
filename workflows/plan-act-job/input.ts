/** A planActJob's input and config: read, resolved and checked before the job does anything. */
import { ApplicationFailure } from '@temporalio/workflow';
import { ConfigError } from '../../src/config/errors';
import type { RunConfig } from '../../src/config/schema';
import type { PlanActJobInput } from '../../src/contracts/plan-act-job';
import { planActProxies } from '../activity-proxies';
import { configFailure, parseConfigOrFail, resolveConfigOrFail } from '../parse-config';

/** The job's config; Plan/Act jobs run the arithmetic task, the grid world trains through trainingRun. */
export async function loadConfig(input: PlanActJobInput): Promise<RunConfig> {
  const cfg = await readConfig(input, input.role);
  if (cfg.task.kind !== 'arith') {
    throw configFailure(new ConfigError('planActJob input', [{ path: 'task.kind', message: 'planActJob runs the arithmetic Plan/Act task; task.kind grid runs through trainingRun' }]));
  }
  return cfg;
}

/** A job's config: its file (read by an activity, recorded once) or its inline config, resolved. */
export async function readConfig(input: Pick<PlanActJobInput, 'config' | 'configFile'>, role?: PlanActJobInput['role']): Promise<RunConfig> {
  if (input.configFile !== undefined) {
    // The file lives with the workers; its parsed content goes into the history, so replays and
    // continue-as-new never read it again.
    const { jobs } = planActProxies((await parseConfigOrFail({}, 'defaults')).timeouts);
    return jobs.loadJobConfig({ file: input.configFile, ...(role ? { role } : {}) });
  }
  return resolveConfigOrFail(input.config ?? {}, 'planActJob input', role ? { consumer: { workflow: 'planActJob', role } } : {});
}

export function validateInput(input: PlanActJobInput, rolloutIds: number[]): void {
  const problems: string[] = [];
  if (!['planner', 'actor', 'shared'].includes(input.role)) problems.push(`role must be planner, actor or shared, got ${JSON.stringify(input.role)}`);
  if (input.config !== undefined && input.configFile !== undefined) problems.push('give config or configFile, not both');
  if (input.weights !== undefined && input.weightsFromRun !== undefined) problems.push('give weights or weightsFromRun, not both');
  if (rolloutIds.length === 0 || !rolloutIds.every((id) => Number.isSafeInteger(id) && id >= 0)) problems.push('rolloutIds must be non-negative integers');
  if (new Set(rolloutIds).size !== rolloutIds.length) problems.push('rolloutIds has duplicates');
  if (input.fromStep !== undefined && (input.weightsFromRun === undefined || input.train === false)) problems.push('fromStep needs weightsFromRun and a job that trains');
  if (problems.length > 0) throw ApplicationFailure.nonRetryable(`invalid planActJob input: ${problems.join('; ')}`, 'ConfigError', problems);
}

export function validateRole(input: PlanActJobInput, cfg: RunConfig): void {
  // trainingRun's keys that mean nothing to a job: say so rather than ignore them.
  const notForJobs = [
    ...(cfg.init?.fromRun !== undefined ? ['init.fromRun (a job takes weightsFromRun / fromStep)'] : []),
    ...(cfg.compare?.moreSft ? ['compare.moreSft (trainingRun only)'] : []),
    ...(cfg.compare?.filteredSft ? ['compare.filteredSft (trainingRun only)'] : []),
    ...(cfg.compare?.rft ? ['compare.rft (trainingRun only)'] : []),
    // Demonstrations are SFT's; a job has none to make.
    ...(cfg.task.demoToolUseRate !== undefined && cfg.task.demoToolUseRate !== 1 ? ['task.demoToolUseRate (SFT demonstrations: trainingRun only)'] : []),
    ...(cfg.task.extraDemonstrations ? ['task.extraDemonstrations (SFT demonstrations: trainingRun only)'] : []),
    ...(cfg.rl.dynamicSampling?.enabled ? ['rl.dynamicSampling (trainingRun only: a job trains on the rollout it took part in)'] : []),
    ...((cfg.workflow?.continueAsNewEvery ?? 0) > 0 ? ['workflow.continueAsNewEvery (trainingRun only)'] : []),
    ...(cfg.inference.openai?.weightSync ? ['inference.openai.weightSync (trainingRun only: a job does not train a remote model)'] : []),
  ];
  if (notForJobs.length > 0) throw ApplicationFailure.nonRetryable(`invalid planActJob config: ${notForJobs.join('; ')}`, 'ConfigError');
  const wanted = input.role === 'shared' ? 'shared' : 'dual';
  if (cfg.rollout.kind !== 'plan-act' || cfg.rollout.mode !== wanted) {
    throw ApplicationFailure.nonRetryable(
      `a ${input.role} job needs rollout.kind: plan-act and rollout.mode: ${wanted}; the config has kind ${cfg.rollout.kind}, mode ${cfg.rollout.mode}`,
      'ConfigError',
    );
  }
}

/** A job that trains needs a policy it can train and publish. */
export function validateTraining(input: PlanActJobInput, cfg: RunConfig): void {
  if (cfg.inference.engine === 'openai') {
    throw ApplicationFailure.nonRetryable('inference.engine: openai serves a remote model this job cannot train or publish; start the job with "train": false', 'ConfigError');
  }
  if (input.weights !== undefined) {
    throw ApplicationFailure.nonRetryable('invalid planActJob input: weights (a bare ONNX export) cannot be trained; give weightsFromRun, or train: false', 'ConfigError');
  }
}
