/**
 * No silent options for chat mode (task.chat, model.tokenizer; docs/chat.md): each refusal names the
 * key and what would make it work. What needs the files (the template's tool support) is checked
 * where a config is loaded to start a run (src/config/start-checks.ts chatStartProblems).
 */
import type { RunConfig } from './schema';

type Problem = { path: string; message: string };

/** The problems of the config's chat settings; none for a config without them (every config before the keys). */
export function chatProblems(cfg: RunConfig): Problem[] {
  const chat = cfg.task.chat;
  const tokenizer = cfg.model.tokenizer;
  if (chat === undefined && tokenizer === undefined) return [];
  if (chat === undefined) {
    return [{ path: 'model.tokenizer', message: "the Plan/Act text protocol needs the project's tokenizer (its <|eos|> token, the <calc> tags); another tokenizer plays chat episodes: set task.chat" }];
  }
  if (tokenizer === undefined) return [{ path: 'task.chat', message: 'chat episodes are rendered with the policy\'s chat template: set model.tokenizer (e.g. qwen3, or a Hugging Face tokenizer directory)' }];
  const problems: Problem[] = [];
  if (chat.tokenizer !== undefined && chat.tokenizer !== tokenizer) {
    problems.push({ path: 'task.chat.tokenizer', message: `it is model.tokenizer's (${tokenizer}), filled in from it: leave it out` });
  }
  if ((cfg.model.arch ?? 'gpt2') === 'gpt2') {
    problems.push({ path: 'model.tokenizer', message: "the GPT-2 policy is the embedded one, whose vocabulary is the project tokenizer's (an untied head over a chat tokenizer's vocabulary is never what you want): set model.arch: qwen3 or llama" });
  }
  if ((cfg.trainer?.backend ?? 'tfjs') !== 'torch') {
    problems.push({ path: 'task.chat', message: 'the tfjs trainer trains the embedded GPT-2 policy over the project tokenizer only; chat mode needs trainer.backend: torch' });
  }
  if (cfg.task.kind !== 'arith') problems.push({ path: 'task.chat', message: 'chat episodes are built for the arithmetic task (task.kind: arith); grid-world episodes are Plan/Act text' });
  if (cfg.rollout.kind !== 'standard') {
    problems.push({ path: 'rollout.kind', message: `chat episodes are built for rollout.kind: standard so far (this config has ${cfg.rollout.kind}); Plan/Act, tree and agent episodes are Plan/Act text` });
  }
  if (cfg.inference.openai?.tokenizer !== undefined) {
    problems.push({ path: 'inference.openai.tokenizer', message: 'in chat mode the served model\'s tokenizer is model.tokenizer (its tokenizer.json is the one the prompts are encoded with): leave it out' });
  }
  if ((cfg.rl.async?.maxStaleness ?? 0) > 0) problems.push({ path: 'rl.async.maxStaleness', message: 'chat episodes are played synchronously so far: leave rl.async out' });
  if (cfg.compare.rft) problems.push({ path: 'compare.rft', message: 'the RFT baseline plays Plan/Act episodes; not built for chat mode yet' });
  return problems;
}

/** task.chat with its tokenizer filled in from model.tokenizer (what activities read). */
export function withChatTokenizer(cfg: RunConfig): RunConfig {
  const chat = cfg.task.chat;
  if (chat === undefined || cfg.model.tokenizer === undefined || chat.tokenizer !== undefined) return cfg;
  return { ...cfg, task: { ...cfg.task, chat: { ...chat, tokenizer: cfg.model.tokenizer } } };
}
