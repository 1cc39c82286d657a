/**
 * The files a finished run uploads to its MLflow run (tracking.mlflow): the curves picture, the
 * comparison as Markdown and JSON, and where its policy is (the checkpoint's name in the blob store,
 * the published weights, the command that exports it). Pure: the same run gives the same bytes, so a
 * retried upload replaces each artifact with itself.
 */
import type { BlobRef } from '../domain/types';
import type { Comparison } from '../contracts/training-run';
import type { CheckpointInfo, WeightsInfo } from '../contracts/weights';
import { comparisonTable } from '../report/comparison-table';
import type { ArtifactFile } from './mlflow-artifacts';

export interface RunArtifacts {
  workflowId: string;
  /** Absent: a run without RL (nothing compared). */
  comparison?: Comparison;
  /** The run's latest checkpoint and its published weights. */
  checkpoint?: CheckpointInfo;
  weights?: WeightsInfo;
}

export const ARTIFACT_PATHS = { curves: 'curves.png', comparisonMd: 'comparison.md', comparisonJson: 'comparison.json', policy: 'policy.json' } as const;

/** Where the run's policy is, as policy.json says it: in the blob store the workers use (DURABLE_RL_STORE, default .data/store). */
export function policyLocation(a: RunArtifacts): Record<string, unknown> {
  const blob = (r: BlobRef | undefined) => (r ? { sha256: r.sha256, bytes: r.bytes, kind: r.kind } : undefined);
  return {
    workflowId: a.workflowId,
    ...(a.checkpoint ? { checkpoint: { name: a.checkpoint.name, step: a.checkpoint.step, blob: blob(a.checkpoint.ref) } } : {}),
    ...(a.weights ? { weights: { version: a.weights.version, step: a.weights.step, onnx: blob(a.weights.onnx), hf: blob(a.weights.hf), ...(a.weights.lora ? { lora: true } : {}) } } : {}),
    // The tfjs trainer's checkpoints export as a Hugging Face directory; the torch trainer's weights (hf) are one already.
    ...(a.checkpoint && !a.weights?.hf ? { export: `npm run export:hf -- --run ${a.workflowId} --step ${a.checkpoint.step} --out <dir>` } : {}),
  };
}

/** The run's artifact files; `curvesPng`, the picture's bytes, when the run drew one. */
export function runArtifactFiles(a: RunArtifacts, curvesPng?: Uint8Array): ArtifactFile[] {
  const files: ArtifactFile[] = [];
  if (curvesPng) files.push({ path: ARTIFACT_PATHS.curves, bytes: curvesPng, contentType: 'image/png' });
  if (a.comparison) {
    const md = [`# ${a.workflowId}: the comparison`, '', ...comparisonTable(a.comparison), ''].join('\n');
    files.push({ path: ARTIFACT_PATHS.comparisonMd, bytes: md, contentType: 'text/markdown; charset=utf-8' });
    files.push({ path: ARTIFACT_PATHS.comparisonJson, bytes: `${JSON.stringify(a.comparison, null, 2)}\n`, contentType: 'application/json' });
  }
  files.push({ path: ARTIFACT_PATHS.policy, bytes: `${JSON.stringify(policyLocation(a), null, 2)}\n`, contentType: 'application/json' });
  return files;
}
