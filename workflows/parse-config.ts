/** Run configs as workflows receive them: validated inside the workflow, bad ones a typed failure. */
import { ApplicationFailure } from '@temporalio/workflow';
import { ConfigError } from '../src/config/errors';
import type { RunConfig, RunConfigInput } from '../src/config/schema';

/**
 * Fails the workflow with a non-retryable ConfigError naming every bad field (no retry can fix it).
 * The parser (zod and the schema) loads on first use: every workflow instance evaluates the
 * modules it imports anew, and building the schema costs ~12 ms of CPU, which the many episode
 * and session workflows that never parse a config should not pay.
 */
export async function parseConfigOrFail(input: RunConfigInput | RunConfig, source: string): Promise<RunConfig> {
  const { parseRunConfig } = await import('../src/config/parse');
  try {
    return parseRunConfig(input, source);
  } catch (err) {
    if (err instanceof ConfigError) throw configFailure(err);
    throw err;
  }
}

/** The workflow failure for a ConfigError: non-retryable, its problems as details. */
export function configFailure(err: ConfigError): ApplicationFailure {
  return ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
}
