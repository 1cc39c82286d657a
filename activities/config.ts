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
import { keysIgnoredBy, type ConfigConsumer } from '../src/config/workflow-keys';

export interface ResolveRunConfigInput {
  config: RunConfigInput | RunConfig;
  /** Where the config came from, for the error message ("workflow input", "planActJob input"). */
  source: string;
  /** The workflow that will run it: the keys it would ignore are refused (absent in inputs recorded before the check). */
  consumer?: ConfigConsumer;
  /** A later execution of a run (continue-as-new, --resume): its config was accepted when it started, and is not refused now. */
  continued?: boolean;
}

export function createConfigActivities() {
  return {
    async resolveRunConfig({ config, source, consumer, continued }: ResolveRunConfigInput): Promise<RunConfig> {
      try {
        const cfg = parseRunConfig(config, source, { refuseUnread: !continued });
        const ignored = consumer && !continued ? keysIgnoredBy(cfg, consumer) : [];
        if (ignored.length > 0) throw new ConfigError(source, ignored);
        return cfg;
      } catch (err) {
        if (err instanceof ConfigError) throw ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
        throw err;
      }
    },
  };
}

export type ConfigActivities = ReturnType<typeof createConfigActivities>;
