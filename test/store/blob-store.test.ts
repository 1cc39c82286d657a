/**
 * The BlobStore contract, run against both implementations: the local folder (FsBlobStore) and S3
 * (S3BlobStore on the real S3-compatible server that global-setup starts, versitygw). Then what only
 * one of them can show: no temp files left in the folder; on S3, the service's own guarantees the
 * store relies on (checksummed uploads, no object from an interrupted upload, conditional writes).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { LOCAL_S3_CREDENTIALS } from '../../scripts/lib/s3-server';
import type { BlobRef } from '../../src/domain/types';
import { REPO_ROOT } from '../../src/paths';
import { sha256Hex } from '../../src/store/blob-keys';
import { BlobCorruptError, BlobNotFoundError, getJson, putJson, type BlobStore } from '../../src/store/blob-store';
import { S3BlobStore } from '../../src/store/s3-blob-store';
import { testS3 } from '../helpers/s3';
import { tempStore } from '../helpers/store';

const bytes = (s: string) => new TextEncoder().encode(s);

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

interface Subject {
  store: BlobStore;
  /** Keys (files or objects) holding blob bytes. */
  blobCount(): Promise<number>;
  /** Replaces a stored blob's bytes behind the store's back. */
  tamper(ref: BlobRef, content: string): Promise<void>;
}

const s3 = testS3();

async function s3Keys(store: S3BlobStore, under: string): Promise<string[]> {
  const res = await s3.client.send(new ListObjectsV2Command({ Bucket: store.location.bucket, Prefix: `${store.location.prefix}/${under}` }));
  return (res.Contents ?? []).map((o) => o.Key!);
}

const SUBJECTS: Array<[string, (label: string) => Subject]> = [
  [
    'FsBlobStore',
    (label) => {
      const store = tempStore(label);
      return {
        store,
        blobCount: async () => filesUnder(path.join(store.root, 'blobs')).length,
        tamper: async (ref, content) => fs.writeFileSync(path.join(store.root, 'blobs', ref.sha256.slice(0, 2), ref.sha256.slice(2)), content),
      };
    },
  ],
  [
    'S3BlobStore',
    (label) => {
      const store = s3.store(label);
      return {
        store,
        blobCount: async () => (await s3Keys(store, 'blobs/')).length,
        tamper: async (ref, content) => {
          const key = `${store.location.prefix}/blobs/${ref.sha256.slice(0, 2)}/${ref.sha256.slice(2)}`;
          await s3.client.send(new PutObjectCommand({ Bucket: store.location.bucket, Key: key, Body: content }));
        },
      };
    },
  ],
];

describe.each(SUBJECTS)('%s (BlobStore contract)', (_name, make) => {
  it('stores equal content once, however often and concurrently it is written', async () => {
    const { store, blobCount } = make('idem');
    const refs = await Promise.all(Array.from({ length: 20 }, () => store.put(bytes('same payload'), 'tokens')));
    expect(new Set(refs.map((r) => r.sha256)).size).toBe(1);
    expect(await blobCount()).toBe(1);
    await store.put(bytes('same payload'), 'tokens');
    expect(await blobCount()).toBe(1);
    expect(new TextDecoder().decode(await store.get(refs[0]!))).toBe('same payload');
    expect(await store.has(refs[0]!)).toBe(true);
    expect(await store.has({ ...refs[0]!, sha256: 'e'.repeat(64) })).toBe(false);
  });

  it('nameIfAbsent keeps the first writer, so a retried step cannot write its checkpoint twice', async () => {
    const { store } = make('names');
    const attempts = await Promise.all(Array.from({ length: 8 }, (_, i) => store.put(bytes(`attempt ${i}`), 'checkpoint')));
    const results = await Promise.all(attempts.map((ref) => store.nameIfAbsent('runs/r/ckpt/step-1', ref)));
    expect(new Set(results.map((r) => r.sha256)).size).toBe(1);
    expect(attempts.map((a) => a.sha256)).toContain(results[0]!.sha256);
    expect(await store.getName('runs/r/ckpt/step-1')).toEqual(results[0]);
    expect(await store.nameIfAbsent('runs/r/ckpt/step-1', attempts[7]!)).toEqual(results[0]);
    expect(await store.listNames('runs/r/ckpt/')).toEqual(['runs/r/ckpt/step-1']);
  });

  it('setName replaces, getName of a missing name is undefined, listNames is sorted and filtered by prefix', async () => {
    const { store } = make('set');
    const a = await store.put(bytes('a'), 'onnx');
    const b = await store.put(bytes('b'), 'onnx');
    expect(await store.getName('w/latest')).toBeUndefined();
    await store.setName('w/latest', a);
    await store.setName('w/latest', b);
    expect(await store.getName('w/latest')).toEqual(b);
    await Promise.all(['runs/x/ckpt/step-10', 'runs/x/ckpt/step-2', 'runs/y/ckpt/step-1', 'runs/x/sft/to-step-2'].map((n) => store.setName(n, a)));
    expect(await store.listNames('runs/x/ckpt/')).toEqual(['runs/x/ckpt/step-10', 'runs/x/ckpt/step-2']);
    expect(await store.listNames('runs/')).toHaveLength(4);
    expect(await store.listNames('nothing/')).toEqual([]);
  });

  it('round-trips JSON and large blobs, and reports missing or corrupt blobs with typed errors', async () => {
    const { store, tamper } = make('err');
    const ref = await putJson(store, { tokens: [1, 2, 3] }, 'tokens');
    expect(await getJson(store, ref)).toEqual({ tokens: [1, 2, 3] });
    const big = new Uint8Array(3 << 20).map((_, i) => (i * 31) & 255);
    expect(Buffer.from(await store.get(await store.put(big, 'checkpoint'))).equals(Buffer.from(big))).toBe(true);
    await expect(store.get({ ...ref, sha256: 'f'.repeat(64) })).rejects.toBeInstanceOf(BlobNotFoundError);
    await tamper(ref, 'tampered');
    await expect(store.get(ref)).rejects.toBeInstanceOf(BlobCorruptError);
  });

  it('rejects names and digests that could escape the store', async () => {
    const { store } = make('bad');
    const ref = await store.put(bytes('x'), 'x');
    await expect(store.setName('../escape', ref)).rejects.toThrow(/invalid blob name/);
    await expect(store.nameIfAbsent('a/../../b', ref)).rejects.toThrow(/invalid blob name/);
    await expect(store.get({ ...ref, sha256: '../../etc/passwd' })).rejects.toThrow(/not a sha256/);
  });
});

describe('FsBlobStore', () => {
  it("listNames reads only the prefix's folder, not every name in the store (a new gateway episode's first call)", async () => {
    const store = tempStore('list');
    const ref = await store.put(bytes('x'), 'test');
    for (let i = 0; i < 50; i++) await store.setName(`runs/r${i}/weights/step-1`, ref);
    await store.setName('gateway/episodes/e1/000000', ref);
    const read: string[] = [];
    const original = fs.promises.readdir.bind(fs.promises);
    const readdir = jest.spyOn(fs.promises, 'readdir').mockImplementation(((dir: string, opts: object) => {
      read.push(path.relative(path.join(store.root, 'names'), dir));
      return original(dir, opts as { withFileTypes: true });
    }) as unknown as typeof fs.promises.readdir);
    try {
      expect(await store.listNames('gateway/episodes/e1/')).toEqual(['gateway/episodes/e1/000000']);
      expect(await store.listNames('gateway/episodes/e2/')).toEqual([]);
    } finally {
      readdir.mockRestore();
    }
    expect(read.length).toBeGreaterThan(0);
    expect(read.every((d) => d.startsWith(path.join('gateway', 'episodes')))).toBe(true);
  });

  it('writes again into a folder removed under it (the store remembers the folders it made)', async () => {
    const store = tempStore('gone');
    const first = await store.put(bytes('first'), 'x');
    await store.setName('runs/r/latest', first);
    fs.rmSync(path.join(store.root, 'blobs'), { recursive: true, force: true });
    fs.rmSync(path.join(store.root, 'names'), { recursive: true, force: true });
    // Same folder as `first` (its sha256's first two hex digits), now gone.
    const again = await store.put(bytes('first'), 'x');
    expect(new TextDecoder().decode(await store.get(again))).toBe('first');
    await store.setName('runs/r/latest', again);
    expect(await store.getName('runs/r/latest')).toEqual(again);
  });

  it('leaves no temp files behind', async () => {
    const store = tempStore('tmp');
    await Promise.all([store.put(bytes('a'), 'x'), store.put(bytes('a'), 'x'), store.nameIfAbsent('n/a', await store.put(bytes('b'), 'x'))]);
    expect(filesUnder(store.root).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('S3BlobStore on the S3-compatible server', () => {
  it('lays out blobs and names under its prefix as documented', async () => {
    const store = s3.store('layout');
    const ref = await store.put(bytes('laid out'), 'x');
    await store.setName('runs/r/latest', ref);
    expect(await s3Keys(store, '')).toEqual([`${store.location.prefix}/blobs/${ref.sha256.slice(0, 2)}/${ref.sha256.slice(2)}`, `${store.location.prefix}/names/runs/r/latest.json`]);
  });

  it('the service refuses bytes that do not match the sha256 checksum an upload carries', async () => {
    const store = s3.store('checksum');
    const ref = await store.put(bytes('real content'), 'x');
    const key = `${store.location.prefix}/blobs/00/${'0'.repeat(62)}`;
    const wrong = Buffer.from(ref.sha256, 'hex').toString('base64');
    await expect(s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: 'other content', ChecksumSHA256: wrong }))).rejects.toMatchObject({ name: 'BadDigest' });
    expect(await s3Keys(store, 'blobs/00/')).toEqual([]);
  });

  it('a worker SIGKILLed mid-upload leaves no object, and the retried put stores the whole blob', async () => {
    const store = s3.store('cut');
    const content = new Uint8Array(4 << 20).map((_, i) => (i * 7) & 255);
    const ref: BlobRef = { sha256: sha256Hex(content), bytes: content.byteLength, kind: 'checkpoint' };
    const key = `${store.location.prefix}/blobs/${ref.sha256.slice(0, 2)}/${ref.sha256.slice(2)}`;
    // A separate process starts the PutObject, sends a quarter of the body and is killed there.
    const uploader = `
      const { S3Client, PutObjectCommand } = require('@aws-sdk/client-s3');
      const { Readable } = require('node:stream');
      const client = new S3Client({ endpoint: ${JSON.stringify(s3.endpoint)}, region: 'us-east-1', forcePathStyle: true, credentials: ${JSON.stringify(LOCAL_S3_CREDENTIALS)} });
      let sent = false;
      const body = new Readable({ read() { if (!sent) { sent = true; this.push(Buffer.alloc(${1 << 20}, 7)); setTimeout(() => process.stdout.write('SENT\\n'), 300); } } });
      client.send(new PutObjectCommand({ Bucket: ${JSON.stringify(s3.bucket)}, Key: ${JSON.stringify(key)}, Body: body, ContentLength: ${content.byteLength} }));
    `;
    const child = spawn(process.execPath, ['-e', uploader], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => d.toString().includes('SENT') && resolve());
      child.once('exit', (code) => reject(new Error(`uploader exited (${code}) before sending`)));
    });
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    expect(await store.has(ref)).toBe(false);
    await expect(store.get(ref)).rejects.toBeInstanceOf(BlobNotFoundError);
    expect(await store.put(content, 'checkpoint')).toEqual(ref);
    expect(Buffer.from(await store.get(ref)).equals(Buffer.from(content))).toBe(true);
  });

  it('checks at start-up that the bucket is reachable and conditional writes are honoured', async () => {
    await expect(s3.store('probe').assertConditionalWrites()).resolves.toBeUndefined();
    const missing = new S3BlobStore(s3.client, { bucket: 'no-such-bucket-here', prefix: '' });
    await expect(missing.assertConditionalWrites()).rejects.toThrow(/S3 bucket "no-such-bucket-here" is not reachable at http:\/\/127\.0\.0\.1:\d+/);
  });
});
