/**
 * The sample-set format: one role's training samples as a blob in the store (the claim check),
 * written by the sample activities and read by training (the torch worker reads the same
 * `samples` field) and the viewer; and the reference to it that workflow histories keep. Stored
 * runs and recorded histories hold these: the field names do not change.
 */
import type { AgentRole, BlobRef, Sample } from '../domain/types';
import { getJson, putJson, type BlobStore } from '../store/blob-store';
import type { TimelineCounts } from '../timeline/counts';
import type { SnapReport } from '../timeline/types';

/** Samples of one role written to the blob store (claim check); the history keeps this much. */
export interface SampleSetRef {
  role: AgentRole;
  ref: BlobRef;
  samples: number;
  responseTokens: number;
  meanReward: number;
  /** Timeline merging of these samples (absent when written one sample per policy call). */
  timelines?: TimelineCounts;
}

export type SampleSets = Partial<Record<AgentRole, SampleSetRef>>;

/** The blob a SampleSetRef names. */
export interface SampleFile {
  samples: Sample[];
  /** With timeline.snapDetection: where the episodes' surviving timelines part. */
  snaps?: SnapReport[];
}

/** A blob that is JSON but not a sample file (a SyntaxError, as a blob that is not JSON at all). */
export class SampleFileError extends SyntaxError {
  override readonly name = 'SampleFileError';
}

/** The sample file `ref` names; a SampleFileError when it holds no samples array. */
export async function readSampleFile(store: BlobStore, ref: BlobRef): Promise<SampleFile> {
  const file = await getJson<Partial<SampleFile> | null>(store, ref);
  if (file === null || typeof file !== 'object' || !Array.isArray(file.samples)) throw new SampleFileError(`blob ${ref.sha256}: not a sample file (no samples array)`);
  return file as SampleFile;
}

/** The samples of the set `ref` names. */
export async function readSamples(store: BlobStore, ref: BlobRef): Promise<Sample[]> {
  return (await readSampleFile(store, ref)).samples;
}

/** Writes one role's samples (with the merge's counts and snap reports, when they were merged) and returns their reference. */
export async function writeSampleSet(store: BlobStore, role: AgentRole, samples: Sample[], merging?: { counts: TimelineCounts; snaps: SnapReport[] }): Promise<SampleSetRef> {
  const file: SampleFile = { samples, ...(merging && merging.snaps.length > 0 ? { snaps: merging.snaps } : {}) };
  const ref = await putJson(store, file, `samples-${role}`);
  return {
    role,
    ref,
    samples: samples.length,
    responseTokens: samples.reduce((n, s) => n + s.responseTokens.length, 0),
    meanReward: samples.length === 0 ? 0 : round4(samples.reduce((a, s) => a + s.reward, 0) / samples.length),
    ...(merging ? { timelines: merging.counts } : {}),
  };
}

function round4(x: number): number {
  return Math.round(x * 1e4) / 1e4;
}
