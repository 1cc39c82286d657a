/**
 * `npm run viewer` as a user starts it (the built script) over an S3 store on the test run's real
 * S3-compatible server (versitygw): it serves a run recorded there, a blob overwritten in the bucket
 * is a 502 naming it, --tokenizer qwen3 reads samples with Qwen3's tokenizer, and bad flags stop it
 * with a message naming the flag.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { S3BlobStore } from '../../src/store/s3-blob-store';
import { REPO_ROOT } from '../../src/paths';
import { loadTokenizer, loadTokenizerDir } from '../../src/model/tokenizer';
import { resolveTokenizerDir } from '../../src/model/tokenizer-dir';
import { testS3, uniquePrefix } from '../helpers/s3';
import { FIXTURE_RUN, writeViewerFixture } from '../helpers/viewer-fixture';

const SCRIPT = path.join(REPO_ROOT, 'dist', 'scripts', 'viewer.js');
const s3 = testS3();
const prefix = uniquePrefix('viewer-s3');
let child: ChildProcess;
let base = '';
let setSha = '';
let runsDirOfFixture = '';

beforeAll(async () => {
  const store = new S3BlobStore(s3.client, { bucket: s3.bucket, prefix });
  const runsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-viewer-s3-runs-'));
  setSha = await writeViewerFixture(store, runsDir);
  runsDirOfFixture = runsDir;
  child = spawn(process.execPath, [SCRIPT, '--port', '0', '--runs', runsDir, '--temporal-ui', 'none'], { env: { ...process.env, ...s3.env(prefix) }, stdio: ['ignore', 'pipe', 'inherit'] });
  base = await viewerUrl(child);
}, 60_000);

/** The URL a viewer process prints once it serves; rejects if it exits first. */
function viewerUrl(viewer: ChildProcess): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let out = '';
    viewer.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /rollout viewer: (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    viewer.once('exit', (code) => reject(new Error(`viewer exited with ${code}: ${out}`)));
  });
}

afterAll(() => {
  child?.kill('SIGKILL');
});

test('a blob overwritten in the bucket is a 502 naming it, and the run is served again once it is put back', async () => {
  const key = `${prefix}/blobs/${setSha.slice(0, 2)}/${setSha.slice(2)}`;
  const store = new S3BlobStore(s3.client, { bucket: s3.bucket, prefix });
  const good = await store.get({ sha256: setSha, bytes: 0, kind: 'samples-single' });
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: '{"samples":[]}' }));
  try {
    const res = await fetch(`${base}/api/runs/${FIXTURE_RUN}/steps/103`);
    expect(res.status).toBe(502);
    expect(await res.json()).toMatchObject({ error: 'blob-corrupt', message: expect.stringContaining(setSha) });
  } finally {
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: good }));
  }
});

test('serves the page and a run whose records are in an S3 bucket', async () => {
  const page = await fetch(`${base}/`);
  expect(page.status).toBe(200);
  expect(await page.text()).toContain('<script src="/app.js">');
  const step = (await (await fetch(`${base}/api/runs/${FIXTURE_RUN}/steps/101`)).json()) as { groups: Array<{ episodes: unknown[] }> };
  expect(step.groups.map((g) => g.episodes.length)).toEqual([2, 2]);
});

test('--tokenizer qwen3 reads the samples with Qwen3\'s tokenizer (chat runs whose samples do not name theirs)', async () => {
  const qwen = spawn(process.execPath, [SCRIPT, '--port', '0', '--runs', runsDirOfFixture, '--temporal-ui', 'none', '--temporal-address', 'none', '--tokenizer', 'qwen3'], { env: { ...process.env, ...s3.env(prefix) }, stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const at = await viewerUrl(qwen);
    const step = (await (await fetch(`${at}/api/runs/${FIXTURE_RUN}/steps/101`)).json()) as { groups: Array<{ prompt: string }> };
    const ids = loadTokenizer().encode('Compute: 17+25\n');
    expect(step.groups[0]!.prompt).toBe(loadTokenizerDir(resolveTokenizerDir('qwen3')).decode(ids));
    expect(step.groups[0]!.prompt).not.toBe('Compute: 17+25\n');
  } finally {
    qwen.kill('SIGKILL');
  }
});

test.each([
  [['--port', 'abc'], /--port.*expected a port number 0-65535, got 'abc'/],
  [['--temporal-ui', 'localhost:8233'], /--temporal-ui.*expected an http\(s\) address or 'none'/],
  [['--store', 'ftp://host/x'], /--store must be a folder or s3:\/\/bucket\[\/prefix\]/],
  [['--tokenizer', 'no/such/tokenizer-dir'], /--tokenizer no\/such\/tokenizer-dir: ENOENT/],
])('%j stops it with a message naming the flag', (args, message) => {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', env: { ...process.env, DURABLE_RL_STORE: '' } });
  expect(r.status).not.toBe(0);
  expect(r.stderr).toMatch(message);
});
