/**
 * Run configs as workflows receive them. Workflows started on this code resolve their config with
 * the resolveRunConfig activity: the defaults are applied once and the complete config is recorded
 * in the history, so newer code replaying it never re-applies other defaults (README, "Changing
 * workflow code"). parseConfigOrFail is the older in-workflow parse, kept for the histories that
 * were recorded with it.
 */
import { ActivityFailure, ApplicationFailure, patched } from '@temporalio/workflow';
import { configProxies } from './activity-proxies';
import type { ResolveRunConfigInput } from '../activities/config';
import { ConfigError } from '../src/config/errors';
import type { RunConfig, RunConfigInput } from '../src/config/schema';
import type { RefusalScope } from '../src/config/refusals';
import { asRecordedInWorkflow, withRecordedDefaults } from '../src/config/recorded';

const { resolveRunConfig } = configProxies;

/**
 * The complete config for this execution, a bad one failing the workflow with a non-retryable
 * ConfigError naming every bad field. Behind patched('config-resolved-once'): histories recorded
 * before it keep parsing inside the workflow, as they did.
 */
export async function resolveConfigOrFail(input: RunConfigInput | RunConfig, source: string, check: Pick<ResolveRunConfigInput, 'consumer' | 'continued' | 'allRefusals'> = {}): Promise<RunConfig> {
  if (!patched('config-resolved-once')) return parseConfigOrFail(input, source);
  try {
    // A config recorded before a key existed lacks it: filled with the recording code's behaviour.
    return withRecordedDefaults(await resolveRunConfig({ config: input, source, ...check }));
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === 'ConfigError') {
      throw ApplicationFailure.nonRetryable(cause.message, 'ConfigError', ...(cause.details ?? []));
    }
    throw err;
  }
}

/**
 * Fails the workflow with a non-retryable ConfigError naming every bad field (no retry can fix it).
 * The parser (zod and the schema) loads on first use: every workflow instance evaluates the
 * modules it imports anew, and building the schema costs ~12 ms of CPU, which the many episode
 * and session workflows that never parse a config should not pay.
 */
export async function parseConfigOrFail(input: RunConfigInput | RunConfig, source: string): Promise<RunConfig> {
  const { parseRunConfig } = await import('../src/config/parse');
  try {
    // Only histories older than every later key parse here.
    return asRecordedInWorkflow(parseRunConfig(input, source, { refuseUnread: false }));
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err);
    throw err;
  }
}

/**
 * The patch under which the config activity makes every refusal of the table (src/config/refusals.ts)
 * and workflow code none: a workflow recorded before it makes the table's `fromWorkflow` rows itself,
 * where it made them (refuseAsRecorded), so its history replays as it ran.
 */
export const CONFIG_REFUSALS_TABLE = 'config-refusals-table';

/**
 * A workflow recorded before CONFIG_REFUSALS_TABLE: the refusals its code made itself (the table's
 * `fromWorkflow` rows for `scope.consumer`), failing it with a non-retryable ConfigError. The table
 * loads on first use, as the parser does (parseConfigOrFail).
 */
export async function refuseAsRecorded(cfg: RunConfig, source: string, scope: Omit<RefusalScope, 'fromWorkflow' | 'continued'>): Promise<void> {
  const { refuseConfig } = await import('../src/config/refusals');
  try {
    refuseConfig(cfg, source, { ...scope, fromWorkflow: 'only' });
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err);
    throw err;
  }
}

/** The workflow failure for a ConfigError: non-retryable, its problems as details. */
export function configFailure(err: ConfigError): ApplicationFailure {
  return ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
}
