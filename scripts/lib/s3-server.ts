/**
 * A local S3-compatible server: versitygw (https://github.com/versity/versitygw), which setup builds
 * from the Go module proxy, serving S3 over a folder with its posix backend (each bucket a
 * sub-folder). The tests, the benchmark and the local multi-process deployment start it on a port of
 * their choosing; nothing here is a mock, it is a real S3 server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { portOpen } from './dev-server';
import { spawnLogged } from './logged-process';

export const VERSITYGW_VERSION = 'v1.8.0';

export function versitygwPath(): string {
  if (process.env.DURABLE_RL_VERSITYGW) return process.env.DURABLE_RL_VERSITYGW;
  const cache = process.env.DURABLE_RL_CACHE ?? path.join(os.homedir(), '.cache', 'durable-rl');
  return path.join(cache, `versitygw-${VERSITYGW_VERSION}`, 'versitygw');
}

/** The root account's keys of a local server: it is bound to 127.0.0.1 and holds throwaway data. */
export const LOCAL_S3_CREDENTIALS = { accessKeyId: 'durable-rl-local', secretAccessKey: 'durable-rl-local-secret' } as const;

export interface S3ServerOptions {
  port: number;
  /** The folder it serves; buckets are its sub-folders. */
  dataDir: string;
  logFile: string;
  /** Keep running after this process exits (the local deployment script). */
  detached?: boolean;
}

export interface RunningS3Server {
  endpoint: string;
  pid: number;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** What a worker process needs in its environment to use s3://<bucket>/<prefix> on this server. */
  env(bucket: string, prefix?: string): Record<string, string>;
  createBucket(bucket: string): Promise<void>;
  /** SIGTERM, resolving once the process has exited. */
  stop(): Promise<void>;
}

export async function startS3Server(opts: S3ServerOptions): Promise<RunningS3Server> {
  const binary = versitygwPath();
  if (!fs.existsSync(binary)) throw new Error(`versitygw not found at ${binary}; run scripts/setup.sh (it builds it once from the Go module proxy)`);
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const { accessKeyId, secretAccessKey } = LOCAL_S3_CREDENTIALS;
  // Keys by environment, not argv, so they do not show in `ps`.
  const { child, exitCode, exited: exit } = spawnLogged(binary, ['--port', `127.0.0.1:${opts.port}`, '--quiet', 'posix', opts.dataDir], {
    logFile: opts.logFile,
    detached: opts.detached ?? false,
    env: { ...process.env, ROOT_ACCESS_KEY_ID: accessKeyId, ROOT_SECRET_ACCESS_KEY: secretAccessKey },
  });
  const deadline = Date.now() + 30_000;
  while (!(await portOpen(`127.0.0.1:${opts.port}`))) {
    if (exitCode() !== null) throw new Error(`versitygw exited with ${exitCode()}; see ${opts.logFile}`);
    if (Date.now() > deadline) throw new Error(`versitygw did not listen on 127.0.0.1:${opts.port} within 30 s; see ${opts.logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const endpoint = `http://127.0.0.1:${opts.port}`;
  const credentials = { accessKeyId, secretAccessKey };
  return {
    endpoint,
    pid: child.pid ?? -1,
    credentials,
    env: (bucket, prefix) => ({
      DURABLE_RL_STORE: `s3://${bucket}${prefix ? `/${prefix}` : ''}`,
      DURABLE_RL_S3_ENDPOINT: endpoint,
      DURABLE_RL_S3_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: accessKeyId,
      AWS_SECRET_ACCESS_KEY: secretAccessKey,
    }),
    createBucket: async (bucket) => {
      const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials });
      try {
        await client.send(new CreateBucketCommand({ Bucket: bucket }));
      } catch (err) {
        // Created by an earlier run against the same folder: fine, it is ours.
        if ((err as Error).name !== 'BucketAlreadyOwnedByYou') throw err;
      } finally {
        client.destroy();
      }
    },
    stop: async () => {
      if (exitCode() === null) child.kill('SIGTERM');
      await exit;
    },
  };
}
