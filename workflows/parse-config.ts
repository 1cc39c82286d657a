/** Run configs as workflows receive them: validated inside the workflow, bad ones a typed failure. */
import { ApplicationFailure } from '@temporalio/workflow';
import { ConfigError } from '../src/config/errors';
import { parseRunConfig } from '../src/config/parse';
import type { RunConfig, RunConfigInput } from '../src/config/schema';

/** Fails the workflow with a non-retryable ConfigError naming every bad field (no retry can fix it). */
export function parseConfigOrFail(input: RunConfigInput | RunConfig, source: string): RunConfig {
  try {
    return parseRunConfig(input, source);
  } catch (err) {
    if (err instanceof ConfigError) throw ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
    throw err;
  }
}
