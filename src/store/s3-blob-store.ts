/**
 * BlobStore on any S3-compatible service (AWS S3, MinIO, Ceph RGW, Cloudflare R2, versitygw...), so
 * workers on different hosts read what the others wrote.
 *
 * Layout under `<bucket>/<prefix>`, the same as FsBlobStore's folder:
 *   blobs/<sha256[0:2]>/<sha256[2:]>   the bytes, content-addressed
 *   names/<name>.json                  a BlobRef as JSON
 *
 * Why a retried activity never leaves a half-written or duplicated blob:
 * - a PutObject is atomic per object: readers see the whole new object or none;
 * - blob keys are the content's sha256, so a second write of the same bytes is the same object (and is
 *   skipped after a HEAD); every blob upload carries x-amz-checksum-sha256, so the service itself
 *   refuses bytes that were damaged in transit instead of storing them under a key they do not hash to;
 * - nameIfAbsent is a conditional write (If-None-Match: *): of racing writers exactly one creates the
 *   name and the others get 412 and read the winner's value. assertConditionalWrites() checks at
 *   start-up that the service honours it, since one that ignored the header would silently let a
 *   retried step overwrite a checkpoint name.
 */
import { randomBytes } from 'node:crypto';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import type { BlobRef } from '../domain/types';
import { checkBlobName, checkSha256, sha256Hex } from './blob-keys';
import { BlobCorruptError, BlobNotFoundError, type BlobStore } from './blob-store';

export interface S3Location {
  bucket: string;
  /** Key prefix without leading or trailing "/"; "" for the bucket's root. */
  prefix: string;
}

/** The largest object one PutObject may write (S3's limit); larger blobs would need multipart upload. */
export const MAX_SINGLE_PUT_BYTES = 5 * 1024 ** 3;

/** Attempts of a conditional write that the service answered 409 (a concurrent conditional write in flight, AWS's ConditionalRequestConflict). */
const CONFLICT_ATTEMPTS = 8;

export class S3BlobStore implements BlobStore {
  private readonly base: string;

  constructor(
    readonly client: S3Client,
    readonly location: S3Location,
  ) {
    this.base = location.prefix === '' ? '' : `${location.prefix}/`;
  }

  /** s3://bucket/prefix, for logs. */
  get url(): string {
    return `s3://${this.location.bucket}${this.location.prefix ? `/${this.location.prefix}` : ''}`;
  }

  async put(bytes: Uint8Array, kind: string): Promise<BlobRef> {
    if (bytes.byteLength > MAX_SINGLE_PUT_BYTES) throw new RangeError(`blob of ${bytes.byteLength} bytes is over the ${MAX_SINGLE_PUT_BYTES}-byte limit of one S3 PutObject`);
    const sha256 = sha256Hex(bytes);
    const ref: BlobRef = { sha256, bytes: bytes.byteLength, kind };
    for (let attempt = 1; ; attempt++) {
      // Saves re-uploading a checkpoint that a previous attempt (or another worker) already stored.
      if (await this.has(ref)) return ref;
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.location.bucket,
            Key: this.blobKey(sha256),
            Body: bytes,
            ContentLength: bytes.byteLength,
            ChecksumSHA256: Buffer.from(sha256, 'hex').toString('base64'),
            IfNoneMatch: '*',
          }),
        );
        return ref;
      } catch (err) {
        // 412: someone stored the same content meanwhile (under this key it can only be these bytes).
        if (isStatus(err, 412)) return ref;
        // 409: their write is still in flight and may yet fail; look again.
        if (!isStatus(err, 409) || attempt >= CONFLICT_ATTEMPTS) throw err;
        await backoff(attempt);
      }
    }
  }

  async get(ref: BlobRef): Promise<Uint8Array> {
    const bytes = await this.getObject(this.blobKey(ref.sha256));
    if (bytes === undefined) throw new BlobNotFoundError(ref);
    const actual = sha256Hex(bytes);
    if (actual !== ref.sha256) throw new BlobCorruptError(ref, actual);
    return bytes;
  }

  async has(ref: BlobRef): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.location.bucket, Key: this.blobKey(ref.sha256) }));
      return true;
    } catch (err) {
      if (isStatus(err, 404)) return false;
      throw err;
    }
  }

  async nameIfAbsent(name: string, ref: BlobRef): Promise<BlobRef> {
    const key = this.nameKey(name);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.putName(key, ref, true);
        return ref;
      } catch (err) {
        if (isStatus(err, 409) && attempt < CONFLICT_ATTEMPTS) {
          await backoff(attempt);
          continue;
        }
        if (!isStatus(err, 412)) throw err;
      }
      const existing = await this.getName(name);
      if (!existing) throw new Error(`name ${name} vanished while being read`);
      return existing;
    }
  }

  async setName(name: string, ref: BlobRef): Promise<void> {
    await this.putName(this.nameKey(name), ref, false);
  }

  async getName(name: string): Promise<BlobRef | undefined> {
    const bytes = await this.getObject(this.nameKey(name));
    return bytes === undefined ? undefined : (JSON.parse(Buffer.from(bytes).toString('utf8')) as BlobRef);
  }

  async listNames(prefix: string): Promise<string[]> {
    if (!/^[A-Za-z0-9._/-]*$/.test(prefix) || prefix.split('/').some((p) => p === '..')) throw new RangeError(`invalid name prefix ${JSON.stringify(prefix)}`);
    const keyPrefix = `${this.base}names/`;
    const out: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.location.bucket, Prefix: keyPrefix + prefix, ContinuationToken: token }));
      for (const o of page.Contents ?? []) if (o.Key?.endsWith('.json')) out.push(o.Key.slice(keyPrefix.length, -'.json'.length));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out.sort();
  }

  /**
   * Fails unless the bucket is reachable with these credentials and the service honours
   * If-None-Match on PutObject (what makes nameIfAbsent atomic). Workers call it before serving.
   */
  async assertConditionalWrites(): Promise<void> {
    const { bucket } = this.location;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch (err) {
      throw new Error(`S3 bucket ${JSON.stringify(bucket)} is not reachable at ${await this.endpointText()}: ${describe(err)}`, { cause: err });
    }
    const key = `${this.base}probe/conditional-write-${randomBytes(8).toString('hex')}`;
    const probe = (body: string) => new PutObjectCommand({ Bucket: bucket, Key: key, Body: body, IfNoneMatch: '*' });
    try {
      await this.client.send(probe('first'));
      try {
        await this.client.send(probe('second'));
      } catch (err) {
        if (isStatus(err, 412)) return;
        throw err;
      }
      throw new Error(
        `the S3 service at ${await this.endpointText()} ignored If-None-Match: * on PutObject (a second conditional write of ${key} succeeded), so names could not be created exactly once; use a service with conditional writes`,
      );
    } finally {
      await this.client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key })).catch(() => undefined);
    }
  }

  private async putName(key: string, ref: BlobRef, onlyIfAbsent: boolean): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.location.bucket,
        Key: key,
        Body: JSON.stringify(ref),
        ContentType: 'application/json',
        ...(onlyIfAbsent ? { IfNoneMatch: '*' } : {}),
      }),
    );
  }

  private async getObject(key: string): Promise<Uint8Array | undefined> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.location.bucket, Key: key }));
      if (!res.Body) throw new Error(`S3 GetObject of ${key} returned no body`);
      return await res.Body.transformToByteArray();
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  private blobKey(sha256: string): string {
    checkSha256(sha256);
    return `${this.base}blobs/${sha256.slice(0, 2)}/${sha256.slice(2)}`;
  }

  private nameKey(name: string): string {
    return `${this.base}names/${checkBlobName(name)}.json`;
  }

  private async endpointText(): Promise<string> {
    const endpoint = this.client.config.endpoint ? await this.client.config.endpoint() : undefined;
    return endpoint ? `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ''}` : `the region's AWS endpoint (${await this.client.config.region()})`;
  }
}

function backoff(attempt: number): Promise<void> {
  return new Promise((r) => setTimeout(r, 25 * attempt));
}

/** The SDK's errors carry the HTTP status in $metadata; 404 covers NoSuchKey (GET) and NotFound (HEAD). */
function isStatus(err: unknown, status: number): boolean {
  return typeof err === 'object' && err !== null && (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === status;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
  return `${err.name}${status ? ` (HTTP ${status})` : ''}${err.message && err.message !== err.name ? `: ${err.message}` : ''}`;
}
