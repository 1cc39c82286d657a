import type { Completion, SamplingParams } from '../domain/types';

/** A policy that turns prompts into completions with token ids, logprobs and entropy. */
export interface PolicyEngine {
  /** Weight version the engine currently serves. */
  readonly weightVersion: number;
  generate(prompts: string[], params: SamplingParams): Promise<Completion[]>;
  /** Frees native resources (sessions, device memory); the engine is unusable afterwards. */
  release?(): Promise<void>;
}
