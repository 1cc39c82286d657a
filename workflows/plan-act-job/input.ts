/** A planActJob's input and config: read, resolved and checked before the job does anything. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { RunConfig } from '../../src/config/schema';
import type { PlanActJobInput } from '../../src/contracts/plan-act-job';
import { planActProxies } from '../activity-proxies';
import { parseConfigOrFail, resolveConfigOrFail } from '../parse-config';

/**
 * The job's config, refused (naming the key) where this job cannot run it: by the config activity
 * (src/config/refusals.ts) when `checkedByActivity`, else, for a job recorded before the
 * config-refusals-table patch, by the workflow after it (workflow.ts, refuseAsRecorded).
 */
export async function loadConfig(input: PlanActJobInput, checkedByActivity: boolean): Promise<RunConfig> {
  return readConfig(input, input.role, checkedByActivity ? { trains: input.train !== false, allRefusals: true } : {});
}

/** A job's config: its file (read by an activity, recorded once) or its inline config, resolved. */
export async function readConfig(input: Pick<PlanActJobInput, 'config' | 'configFile'>, role?: PlanActJobInput['role'], table: { trains?: boolean; allRefusals?: true } = {}): Promise<RunConfig> {
  const { trains, allRefusals } = table;
  if (input.configFile !== undefined) {
    // The file lives with the workers; its parsed content goes into the history, so replays and
    // continue-as-new never read it again.
    const { jobs } = planActProxies((await parseConfigOrFail({}, 'defaults')).timeouts);
    return jobs.loadJobConfig({ file: input.configFile, ...(role ? { role } : {}), ...(trains !== undefined ? { trains } : {}), ...(allRefusals ? { allRefusals } : {}) });
  }
  const consumer = role ? { consumer: { workflow: 'planActJob' as const, role, ...(trains !== undefined ? { trains } : {}) } } : {};
  return resolveConfigOrFail(input.config ?? {}, 'planActJob input', { ...consumer, ...(allRefusals ? { allRefusals } : {}) });
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

/** A job that trains needs weights it can train and publish (its config's part: src/config/refusals.ts). */
export function validateTraining(input: PlanActJobInput): void {
  if (input.weights !== undefined) {
    throw ApplicationFailure.nonRetryable('invalid planActJob input: weights (a bare ONNX export) cannot be trained; give weightsFromRun, or train: false', 'ConfigError');
  }
}
