/**
 * Chat mode's config (task.chat, model.tokenizer; docs/chat.md) as activities read it. Its refusals
 * are rows of src/config/refusals.ts; what needs the files is in start-checks.ts.
 */
import type { RunConfig } from './schema';

/** task.chat with its tokenizer filled in from model.tokenizer (what activities read). */
export function withChatTokenizer(cfg: RunConfig): RunConfig {
  const chat = cfg.task.chat;
  if (chat === undefined || cfg.model.tokenizer === undefined || chat.tokenizer !== undefined) return cfg;
  return { ...cfg, task: { ...cfg.task, chat: { ...chat, tokenizer: cfg.model.tokenizer } } };
}
