/** Weights, checkpoints and policies as they travel between workflows and activities: references, never bytes. */
import type { BlobRef, RemoteEngineRef } from '../domain/types';

export interface CheckpointInfo {
  /** Blob-store name, e.g. runs/<runId>/ckpt/step-000100. */
  name: string;
  ref: BlobRef;
  step: number;
}

export interface WeightsInfo {
  version: number;
  /** Training step of the checkpoint these weights were exported from. */
  step: number;
  /** The tfjs trainer's export: the ONNX graph the embedded engine runs. */
  onnx?: BlobRef;
  /**
   * The torch trainer's: a Hugging Face checkpoint manifest (kind hf-checkpoint, python/durable_rl_torch
   * checkpoints.py) without the optimizer. The embedded engine exports a GPT-2 one to ONNX when it loads
   * it (src/model/hf-checkpoint.ts); other architectures are served by vLLM.
   */
  hf?: BlobRef;
  /**
   * hf is a LoRA checkpoint (trainer.lora): a synced vLLM serves its adapter beside the base under a
   * name derived from the weights (src/engine/vllm-weights.ts loraModelName), so a request names
   * exactly the weights it was sent for; the embedded engine serves the adapter merged.
   */
  lora?: boolean;
}

export interface LossPoint {
  step: number;
  loss: number;
}

/** A policy as a rollout sees it: its weights, and which inference workers serve them. */
export interface PolicyRef {
  weights: WeightsInfo;
  /** Task queue of the inference workers for these weights; default: the project's inference queue. */
  inferenceQueue?: string;
  /** inference.engine openai: generate on this OpenAI-compatible server (weights then only label samples). */
  remote?: RemoteEngineRef;
}
