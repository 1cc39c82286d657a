import type { BlobRef } from '../domain/types';

/**
 * Claim-check store: large payloads (token arrays, logprobs, datasets, checkpoints, ONNX weights)
 * are written here and travel through Temporal as BlobRefs.
 *
 * Blobs are content-addressed, so writing the same bytes twice stores them once: a retried activity
 * never duplicates data. Names are small mutable pointers to blobs (e.g. "run/x/ckpt/step-100").
 */
export interface BlobStore {
  put(bytes: Uint8Array, kind: string): Promise<BlobRef>;
  get(ref: BlobRef): Promise<Uint8Array>;
  has(ref: BlobRef): Promise<boolean>;
  /**
   * Points `name` at `ref` unless the name already exists; returns whichever ref the name holds
   * afterwards. This is what makes "write checkpoint for step N" happen exactly once.
   */
  nameIfAbsent(name: string, ref: BlobRef): Promise<BlobRef>;
  /** Points `name` at `ref`, replacing any previous target (e.g. "latest weights"). */
  setName(name: string, ref: BlobRef): Promise<void>;
  getName(name: string): Promise<BlobRef | undefined>;
  /** Names under a prefix, sorted. */
  listNames(prefix: string): Promise<string[]>;
}

export class BlobNotFoundError extends Error {
  override readonly name = 'BlobNotFoundError';
  constructor(readonly ref: BlobRef) {
    super(`blob ${ref.kind} ${ref.sha256} (${ref.bytes} bytes) is not in the store`);
  }
}

export class BlobCorruptError extends Error {
  override readonly name = 'BlobCorruptError';
  constructor(readonly ref: BlobRef, readonly actualSha256: string) {
    super(`blob ${ref.kind} ${ref.sha256} has content hashing to ${actualSha256}`);
  }
}

export async function putJson(store: BlobStore, value: unknown, kind: string): Promise<BlobRef> {
  return store.put(new TextEncoder().encode(JSON.stringify(value)), kind);
}

export async function getJson<T>(store: BlobStore, ref: BlobRef): Promise<T> {
  return JSON.parse(new TextDecoder().decode(await store.get(ref))) as T;
}
