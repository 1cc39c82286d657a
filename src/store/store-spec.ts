/**
 * Which blob store a process uses: a worker-process setting (flags or environment), not part of the
 * run config, because it says where this host finds the data, not what the run does; two workers of
 * one run may reach the same bucket through different endpoints.
 *
 *   DURABLE_RL_STORE            a folder (the local FsBlobStore; default .data/store) or s3://bucket[/prefix]
 *   DURABLE_RL_S3_ENDPOINT      http(s)://host[:port] of an S3-compatible service; absent: AWS S3
 *   DURABLE_RL_S3_REGION        signing region; default AWS_REGION, else us-east-1
 *   DURABLE_RL_S3_PATH_STYLE    true | false: bucket in the path, not the host name; default true with an endpoint
 *
 * Credentials come from the AWS SDK's standard chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN, AWS_PROFILE, web identity, instance roles). A malformed value, or an S3 setting
 * given while the store is a folder, is an error naming the setting.
 */
import { S3Client } from '@aws-sdk/client-s3';
import type { BlobStore } from './blob-store';
import { checkBlobName } from './blob-keys';
import { FsBlobStore } from './fs-blob-store';
import { S3BlobStore } from './s3-blob-store';

/** A raw setting and where it came from ("--store", "DURABLE_RL_STORE"), for error messages. */
export interface Setting {
  value: string;
  from: string;
}

export interface StoreSettings {
  store?: Setting;
  s3Endpoint?: Setting;
  s3Region?: Setting;
  s3PathStyle?: Setting;
}

export type StoreSpec =
  | { kind: 'fs'; root: string }
  | { kind: 's3'; bucket: string; prefix: string; endpoint?: string; region: string; forcePathStyle: boolean };

export class StoreConfigError extends Error {
  override readonly name = 'StoreConfigError';
}

export const STORE_ENV = {
  store: 'DURABLE_RL_STORE',
  s3Endpoint: 'DURABLE_RL_S3_ENDPOINT',
  s3Region: 'DURABLE_RL_S3_REGION',
  s3PathStyle: 'DURABLE_RL_S3_PATH_STYLE',
} as const satisfies Record<keyof StoreSettings, string>;

export function storeSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): StoreSettings {
  const out: StoreSettings = {};
  for (const [key, name] of Object.entries(STORE_ENV) as Array<[keyof StoreSettings, string]>) {
    const value = env[name];
    if (value !== undefined && value !== '') out[key] = { value, from: name };
  }
  return out;
}

/** Validates the settings; `defaultRoot` is the folder used when no store is named. */
export function parseStoreSpec(s: StoreSettings, defaultRoot: string, env: NodeJS.ProcessEnv = process.env): StoreSpec {
  const store = s.store?.value ?? defaultRoot;
  if (!store.startsWith('s3://')) {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(store)) throw new StoreConfigError(`${s.store!.from} must be a folder or s3://bucket[/prefix], got ${JSON.stringify(store)}`);
    const stray = [s.s3Endpoint, s.s3Region, s.s3PathStyle].find((x) => x !== undefined);
    if (stray) throw new StoreConfigError(`${stray.from} is set, but the blob store ${JSON.stringify(store)} is a local folder; it only applies to an s3:// store`);
    return { kind: 'fs', root: store };
  }
  const { bucket, prefix } = parseS3Url(s.store!);
  const endpoint = s.s3Endpoint ? parseEndpoint(s.s3Endpoint) : undefined;
  const region = s.s3Region ? parseRegion(s.s3Region) : (env.AWS_REGION || 'us-east-1');
  const forcePathStyle = s.s3PathStyle ? parseBool(s.s3PathStyle) : endpoint !== undefined;
  return { kind: 's3', bucket, prefix, ...(endpoint ? { endpoint } : {}), region, forcePathStyle };
}

export function describeStore(spec: StoreSpec): string {
  if (spec.kind === 'fs') return spec.root;
  return `s3://${spec.bucket}${spec.prefix ? `/${spec.prefix}` : ''} at ${spec.endpoint ?? `AWS S3 (${spec.region})`}`;
}

export interface OpenStoreOptions {
  /** Explicit S3 credentials (tests, benchmarks); default: the AWS SDK's credential chain. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

export function openStore(spec: StoreSpec, opts: OpenStoreOptions = {}): BlobStore {
  if (spec.kind === 'fs') return new FsBlobStore(spec.root);
  return new S3BlobStore(s3Client(spec, opts), { bucket: spec.bucket, prefix: spec.prefix });
}

/** openStore, then for S3 the start-up checks (bucket reachable, conditional writes honoured). */
export async function openCheckedStore(spec: StoreSpec, opts: OpenStoreOptions = {}): Promise<BlobStore> {
  const store = openStore(spec, opts);
  if (store instanceof S3BlobStore) await store.assertConditionalWrites();
  return store;
}

export function s3Client(spec: Extract<StoreSpec, { kind: 's3' }>, opts: OpenStoreOptions = {}): S3Client {
  return new S3Client({
    region: spec.region,
    forcePathStyle: spec.forcePathStyle,
    ...(spec.endpoint ? { endpoint: spec.endpoint } : {}),
    ...(opts.credentials ? { credentials: opts.credentials } : {}),
  });
}

const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

function parseS3Url(s: Setting): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/?#]*)(?:\/([^?#]*))?$/.exec(s.value);
  const bucket = m?.[1] ?? '';
  if (!BUCKET_RE.test(bucket) || bucket.includes('..')) {
    throw new StoreConfigError(`${s.from}: ${JSON.stringify(s.value)} does not name a valid S3 bucket (s3://bucket[/prefix]; 3-63 lowercase letters, digits, "." and "-")`);
  }
  const prefix = (m?.[2] ?? '').replace(/\/+$/, '');
  if (prefix !== '') {
    try {
      checkBlobName(prefix);
    } catch {
      throw new StoreConfigError(`${s.from}: the key prefix ${JSON.stringify(prefix)} must be "/"-separated segments of letters, digits, ".", "_", "-"`);
    }
  }
  return { bucket, prefix };
}

function parseEndpoint(s: Setting): string {
  let url: URL;
  try {
    url = new URL(s.value);
  } catch {
    throw new StoreConfigError(`${s.from} must be a URL such as http://127.0.0.1:9000, got ${JSON.stringify(s.value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StoreConfigError(`${s.from} must be an http:// or https:// URL, got ${JSON.stringify(s.value)}`);
  if (url.username || url.password) throw new StoreConfigError(`${s.from} must not carry credentials; use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY`);
  if (url.pathname !== '/' || url.search || url.hash) throw new StoreConfigError(`${s.from} must be scheme://host[:port] with no path or query, got ${JSON.stringify(s.value)}`);
  return url.origin;
}

function parseRegion(s: Setting): string {
  if (!/^[a-z0-9-]+$/.test(s.value)) throw new StoreConfigError(`${s.from} must be a region name such as us-east-1, got ${JSON.stringify(s.value)}`);
  return s.value;
}

function parseBool(s: Setting): boolean {
  if (s.value === 'true') return true;
  if (s.value === 'false') return false;
  throw new StoreConfigError(`${s.from} must be true or false, got ${JSON.stringify(s.value)}`);
}
