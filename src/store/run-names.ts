/** Blob-store names per run, so every activity, test and the rollout viewer agree where things live. */

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
  weights: (runId: string, version: number) => `runs/${runKey(runId)}/weights/v${pad(version)}`,
  latestWeights: (runId: string) => `runs/${runKey(runId)}/weights/latest`,
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
