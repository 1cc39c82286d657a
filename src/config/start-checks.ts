/**
 * Refusals that need no workflow run, made where a config is loaded to start one (the main job,
 * scripts/config-set.ts) instead of by an activity after the workflow started: the files a config
 * names (a starting policy, a served tokenizer) read from this machine, and the refusals of the
 * workflow it starts (src/config/refusals.ts). The activities keep their refusals, made by the same
 * table: a worker may see another filesystem, and a workflow can be started without this check.
 */
import { loadServedTokenizer } from '../model/tokenizer';
import { checkHfArchitecture, readHfStartingPolicy, StartingPolicyError } from '../model/starting-policy';
import { ChatTemplate } from '../chat/template';
import { loadTokenizerDir } from '../model/tokenizer';
import { resolveTokenizerDir } from '../model/tokenizer-dir';
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
  problems.push(...chatStartProblems(cfg));
  return problems;
}

/**
 * model.tokenizer's files in chat mode: a tokenizer with an end-of-turn token, and a chat template
 * that writes the `calc` tool and the model's tool calls (one that would drop them is refused, not run).
 */
export function chatStartProblems(cfg: RunConfig): KeyProblem[] {
  const name = cfg.model.tokenizer;
  if (name === undefined || cfg.task.chat === undefined) return [];
  const dir = resolveTokenizerDir(name);
  try {
    loadTokenizerDir(dir);
    const template = ChatTemplate.fromDir(dir);
    if (!template.rendersTools || !template.rendersToolCalls) {
      return [{ path: 'model.tokenizer', message: `${name}: its chat template does not write ${template.rendersTools ? "the assistant's tool calls" : 'the offered tools'}, and chat episodes give the model the calc tool: use a template with tool support (e.g. qwen3)` }];
    }
  } catch (err) {
    return [{ path: 'model.tokenizer', message: `${name} (${dir}): ${(err as Error).message}` }];
  }
  return [];
}

/** Throws a ConfigError (`source` names the config) listing startProblems, if any. */
export function checkStartable(cfg: RunConfig, source: string, consumer?: ConfigConsumer): void {
  const problems = startProblems(cfg, consumer);
  if (problems.length > 0) throw new ConfigError(source, problems);
}
