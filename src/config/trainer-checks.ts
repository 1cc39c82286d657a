/**
 * No silent options for the trainer and the architecture (src/config/schema.ts trainer, model.arch):
 * what only the torch trainer does is refused with the tfjs one, and a LoRA adapter where vLLM cannot
 * serve it. (The embedded engine serves every model.arch: src/model/llama-onnx.ts.) Each problem
 * names the key and what would make it count.
 */
import type { RunConfig } from './schema';
import { TrainerSchema } from './schema';

type Problem = { path: string; message: string };

const TORCH_ONLY = ['device', 'dtype', 'lora', 'gradientCheckpointing'] as const;

export function trainerProblems(cfg: RunConfig): Problem[] {
  const problems: Problem[] = [];
  const trainer = cfg.trainer;
  const backend = trainer?.backend ?? 'tfjs';
  if (trainer && backend === 'tfjs') {
    const defaults = TrainerSchema.parse({});
    for (const key of TORCH_ONLY) {
      if (JSON.stringify(trainer[key]) !== JSON.stringify(defaults[key])) {
        problems.push({ path: `trainer.${key}`, message: 'it is a setting of the torch trainer, and trainer.backend is tfjs: set trainer.backend: torch, or leave it out' });
      }
    }
  }
  const arch = cfg.model.arch ?? 'gpt2';
  const synced = cfg.inference.engine === 'openai' && cfg.inference.openai?.weightSync !== undefined;
  if (arch !== 'gpt2' && backend !== 'torch') {
    problems.push({ path: 'model.arch', message: `the tfjs trainer trains the embedded GPT-2 policy only; ${arch} needs trainer.backend: torch` });
  }
  if (trainer?.lora && arch === 'gpt2') {
    problems.push({ path: 'trainer.lora', message: "vLLM serves LoRA adapters of qwen3 and llama policies, not GPT-2's (model.arch is gpt2): set model.arch, or leave trainer.lora out" });
  }
  if (trainer?.lora && !synced) {
    problems.push({ path: 'trainer.lora', message: 'a LoRA adapter is served by vLLM (runtime LoRA loading); the embedded engine serves full weights: set inference.engine: openai with inference.openai.weightSync, or leave trainer.lora out' });
  }
  return problems;
}
