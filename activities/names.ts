/** Blob-store names per run, so every activity (and test) agrees where things live. */
import type { BlobStore } from '../src/store/blob-store';

const pad = (n: number) => String(n).padStart(6, '0');

/** Workflow ids may hold any character; names allow letters, digits, ".", "_" and "-". */
export function runKey(runId: string): string {
  return runId.replace(/[^A-Za-z0-9._-]/g, '_');
}

export const names = {
  checkpoint: (runId: string, step: number) => `runs/${runKey(runId)}/ckpt/step-${pad(step)}`,
  checkpointPrefix: (runId: string) => `runs/${runKey(runId)}/ckpt/`,
  sftChunk: (runId: string, toStep: number) => `runs/${runKey(runId)}/sft/to-step-${pad(toStep)}`,
  rlStep: (runId: string, step: number) => `runs/${runKey(runId)}/rl/step-${pad(step)}`,
  weights: (runId: string, version: number) => `runs/${runKey(runId)}/weights/v${pad(version)}`,
  latestWeights: (runId: string) => `runs/${runKey(runId)}/weights/latest`,
  dataset: (runId: string) => `runs/${runKey(runId)}/dataset/sft`,
  runState: (runId: string) => `runs/${runKey(runId)}/state/latest`,
  runConfig: (runId: string) => `runs/${runKey(runId)}/config-hash`,
};

/** The steps a run has checkpoints at (its checkpoint names' numbers), in store order. */
export async function checkpointSteps(store: BlobStore, runId: string): Promise<number[]> {
  const found = await store.listNames(names.checkpointPrefix(runId));
  return found.map((n) => Number(n.slice(n.lastIndexOf('-') + 1))).filter(Number.isFinite);
}
