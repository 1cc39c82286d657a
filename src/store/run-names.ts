/** Blob-store names per run, so every activity, test and the rollout viewer agree where things live. */
import type { BlobStore } from './blob-store';

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
  /** What an RL update trained on (src/contracts/rollout-record.ts), for the rollout viewer. */
  rolloutRecord: (runId: string, step: number) => `runs/${runKey(runId)}/rollouts/step-${pad(step)}`,
  rolloutRecordPrefix: (runId: string) => `runs/${runKey(runId)}/rollouts/`,
  weights: (runId: string, version: number) => `${names.weightsFolder(runId)}v${pad(version)}`,
  /** Where a run's weights are: every published version, and the latest. */
  weightsFolder: (runId: string) => `runs/${runKey(runId)}/weights/`,
  /** The prefix of every published version's name (names.weights), without the latest. */
  weightsVersionPrefix: (runId: string) => `${names.weightsFolder(runId)}v`,
  latestWeights: (runId: string) => `${names.weightsFolder(runId)}latest`,
  dataset: (runId: string) => `runs/${runKey(runId)}/dataset/sft`,
  runState: (runId: string) => `runs/${runKey(runId)}/state/latest`,
  runConfig: (runId: string) => `runs/${runKey(runId)}/config-hash`,
  /** A dual-mode rollout session's sample sets of both roles (src/contracts/rollout-record.ts). */
  sessionRecord: (sessionId: string) => `sessions/${runKey(sessionId)}`,
};

/** The step number at the end of a name written by names.checkpoint or names.rolloutRecord. */
export function stepOfName(name: string): number {
  return Number(name.slice(name.lastIndexOf('-') + 1));
}

/** The version at the end of a name written by names.weights. */
export function versionOfWeightsName(name: string): number {
  return Number(name.slice(name.lastIndexOf('/v') + 2));
}

/** The steps a run has checkpoints at (its checkpoint names' numbers), in store order. */
export async function checkpointSteps(store: BlobStore, runId: string): Promise<number[]> {
  const found = await store.listNames(names.checkpointPrefix(runId));
  return found.map(stepOfName).filter(Number.isFinite);
}
