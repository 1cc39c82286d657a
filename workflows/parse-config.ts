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
import { asRecordedInWorkflow, withRecordedDefaults } from '../src/config/recorded';

const { resolveRunConfig } = configProxies;

/**
 * The complete config for this execution, a bad one failing the workflow with a non-retryable
 * ConfigError naming every bad field. Behind patched('config-resolved-once'): histories recorded
 * before it keep parsing inside the workflow, as they did.
 */
export async function resolveConfigOrFail(input: RunConfigInput | RunConfig, source: string, check: Pick<ResolveRunConfigInput, 'consumer' | 'continued'> = {}): Promise<RunConfig> {
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

/** The workflow failure for a ConfigError: non-retryable, its problems as details. */
export function configFailure(err: ConfigError): ApplicationFailure {
  return ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
}
