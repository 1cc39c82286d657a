/**
 * Refusals that need no workflow run, made where a config is loaded to start one (the main job,
 * scripts/config-set.ts) instead of by an activity after the workflow started: the files a config
 * names (a starting policy, a served tokenizer) read from this machine, and the refusals of the
 * workflow it starts (src/config/refusals.ts). The activities keep their refusals, made by the same
 * table: a worker may see another filesystem, and a workflow can be started without this check.
 */
import { loadServedTokenizer } from '../model/tokenizer';
import { checkHfArchitecture, readHfStartingPolicy, StartingPolicyError } from '../model/starting-policy';
import { ConfigError } from './errors';
import type { RunConfig } from './schema';
import { firstRefusal, type ConfigConsumer, type KeyProblem } from './refusals';

/** What would refuse `cfg` after its workflow started, read now; `consumer`: the workflow it starts, if known. */
export function startProblems(cfg: RunConfig, consumer?: ConfigConsumer): KeyProblem[] {
  // The rows once checked in workflow code (dual mode, an unsynced server, ...) are left to the activity, as before the table.
  const problems: KeyProblem[] = consumer ? (firstRefusal(cfg, { consumer, fromWorkflow: 'without' })?.problems ?? []) : [];
  const { fromHf } = cfg.init;
  if (fromHf !== undefined) {
    try {
      // The torch trainer reads any architecture (python/durable_rl_torch checkpointFromHf, which
      // checks shape and tokenizer): here only that the directory is of the run's model.arch.
      if (cfg.trainer?.backend === 'torch') checkHfArchitecture(fromHf, cfg.model.arch ?? 'gpt2');
      else readHfStartingPolicy(fromHf, cfg.model);
    } catch (err) {
      if (!(err instanceof StartingPolicyError)) throw err;
      problems.push({ path: 'init.fromHf', message: err.message });
    }
  }
  const served = cfg.inference.openai?.tokenizer;
  if (served !== undefined) {
    try {
      loadServedTokenizer(served);
    } catch (err) {
      problems.push({ path: 'inference.openai.tokenizer', message: `${served}: ${(err as Error).message}` });
    }
  }
  return problems;
}

/** Throws a ConfigError (`source` names the config) listing startProblems, if any. */
export function checkStartable(cfg: RunConfig, source: string, consumer?: ConfigConsumer): void {
  const problems = startProblems(cfg, consumer);
  if (problems.length > 0) throw new ConfigError(source, problems);
}
