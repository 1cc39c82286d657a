/**
 * The test run's S3-compatible server (versitygw, started by global-setup) and throwaway stores on
 * it: each store is a fresh key prefix in the one test bucket, so tests never see each other's blobs.
 */
import { S3Client } from '@aws-sdk/client-s3';
import { LOCAL_S3_CREDENTIALS } from '../../scripts/lib/s3-server';
import { S3BlobStore } from '../../src/store/s3-blob-store';

let counter = 0;
/** Prefixes unique across test files and reruns against the same server. */
export function uniquePrefix(label: string): string {
  counter += 1;
  return `${label}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export interface TestS3 {
  endpoint: string;
  bucket: string;
  client: S3Client;
  /** A store under a fresh prefix. */
  store(label: string): S3BlobStore;
  /** Environment for a worker process using the store at `prefix`. */
  env(prefix: string): Record<string, string>;
}

export function testS3(): TestS3 {
  const endpoint = process.env.DURABLE_RL_TEST_S3_ENDPOINT;
  const bucket = process.env.DURABLE_RL_TEST_S3_BUCKET;
  if (!endpoint || !bucket) throw new Error('DURABLE_RL_TEST_S3_ENDPOINT is not set: run tests through jest (global-setup starts the S3 server)');
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: LOCAL_S3_CREDENTIALS });
  return {
    endpoint,
    bucket,
    client,
    store: (label) => new S3BlobStore(client, { bucket, prefix: uniquePrefix(label) }),
    env: (prefix) => ({
      DURABLE_RL_STORE: `s3://${bucket}/${prefix}`,
      DURABLE_RL_S3_ENDPOINT: endpoint,
      DURABLE_RL_S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
    }),
  };
}
