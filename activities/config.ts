/**
 * Config resolution as an activity: the schema's defaults are applied once, on a worker, and the
 * complete config is recorded in the history as the activity's result. Replaying that history with
 * newer code (whose schema may have other defaults or new keys) reads the recorded config instead of
 * parsing the input again, so a deploy never changes what a running workflow was configured with.
 * The config is refused here, for trainingRun and planActJob alike, by the one table of refusals
 * (src/config/refusals.ts).
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ConfigError } from '../src/config/errors';
import { parseRunConfig } from '../src/config/parse';
import { refuseConfig, type ConfigConsumer } from '../src/config/refusals';
import type { RunConfig, RunConfigInput } from '../src/config/schema';

export interface ResolveRunConfigInput {
  config: RunConfigInput | RunConfig;
  /** Where the config came from, for the error message ("workflow input", "planActJob input"). */
  source: string;
  /** The workflow that will run it: its refusals are made (absent in inputs recorded before the check). */
  consumer?: ConfigConsumer;
  /** A later execution of a run (continue-as-new, --resume): its config was accepted when it started, and the refusals made at start only are not made again. */
  continued?: boolean;
  /**
   * Every refusal of the table, those workflow code made itself before the config-refusals-table
   * patch included (absent: a workflow recorded before it, which still makes them).
   */
  allRefusals?: boolean;
}

/** Throws the ConfigError of a config the table refuses for `consumer` (none given: nothing beyond the parse). */
export function refuseFor(cfg: RunConfig, source: string, { consumer, continued, allRefusals }: Omit<ResolveRunConfigInput, 'config' | 'source'>): void {
  if (consumer) refuseConfig(cfg, source, { consumer, ...(continued ? { continued } : {}), fromWorkflow: allRefusals ? 'with' : 'without' });
}

/** The activity failure of a ConfigError: non-retryable, its problems as details. */
export function asConfigFailure(err: unknown): unknown {
  return err instanceof ConfigError ? ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems) : err;
}

export function createConfigActivities() {
  return {
    async resolveRunConfig({ config, source, ...check }: ResolveRunConfigInput): Promise<RunConfig> {
      try {
        const cfg = parseRunConfig(config, source, { refuseUnread: !check.continued });
        refuseFor(cfg, source, check);
        return cfg;
      } catch (err) {
        throw asConfigFailure(err);
      }
    },
  };
}

export type ConfigActivities = ReturnType<typeof createConfigActivities>;
