/**
 * Config resolution as an activity: the schema's defaults are applied once, on a worker, and the
 * complete config is recorded in the history as the activity's result. Replaying that history with
 * newer code (whose schema may have other defaults or new keys) reads the recorded config instead of
 * parsing the input again, so a deploy never changes what a running workflow was configured with.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ConfigError } from '../src/config/errors';
import { parseRunConfig } from '../src/config/parse';
import type { RunConfig, RunConfigInput } from '../src/config/schema';

export interface ResolveRunConfigInput {
  config: RunConfigInput | RunConfig;
  /** Where the config came from, for the error message ("workflow input", "planActJob input"). */
  source: string;
}

export function createConfigActivities() {
  return {
    async resolveRunConfig({ config, source }: ResolveRunConfigInput): Promise<RunConfig> {
      try {
        return parseRunConfig(config, source);
      } catch (err) {
        if (err instanceof ConfigError) throw ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
        throw err;
      }
    },
  };
}

export type ConfigActivities = ReturnType<typeof createConfigActivities>;
