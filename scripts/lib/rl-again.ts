/**
 * The config that trains a finished main-job run's RL (and RFT, if it had it) again from its SFT
 * checkpoint with some settings changed (scripts/rl-again-config.ts, scripts/rl-again.sh).
 */
import { ConfigError } from '../../src/config/errors';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfig } from '../../src/config/schema';
import { setPath } from './config-set';

/**
 * The run's own config (`run`, as its input file holds it; `source` names that file) with
 * init.fromRun = `runId` and init.step = its SFT steps, no SFT, no SFT baselines (they do not depend
 * on RL, so the run's own are paired with the new RL), then each of `sets` ([dotted path, value]).
 * Validated as a run config; returned as built, so defaults the file does not ask for (such as
 * compare.sftBudget, refused without an SFT baseline) stay out.
 */
export function rlAgainConfig(run: RunConfig, runId: string, sets: ReadonlyArray<readonly [string, unknown]>, source: string): Record<string, unknown> {
  if (run.rl.steps === 0) throw new ConfigError(source, [{ path: 'rl.steps', message: 'the run has no RL phase to train again' }]);
  if (run.init.fromRun !== undefined) throw new ConfigError(source, [{ path: 'init.fromRun', message: `the run started from ${run.init.fromRun}'s checkpoint: train again from that run` }]);
  const { sftBudget: _budget, ...compare } = run.compare;
  // A deep copy: --set writes into nested objects, which must not be the caller's.
  const again: Record<string, unknown> = {
    ...structuredClone(run),
    experiment: `${run.experiment}-again`,
    init: { fromRun: runId, step: run.sft.steps },
    sft: { ...run.sft, steps: 0 },
    compare: { ...compare, moreSft: false, filteredSft: false },
  };
  for (const [key, value] of sets) setPath(again, key, value);
  parseRunConfig(again, `${source} again with ${sets.map(([k]) => `--set ${k}`).join(', ') || 'nothing changed'}`);
  return again;
}
