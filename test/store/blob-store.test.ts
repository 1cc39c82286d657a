import fs from 'node:fs';
import path from 'node:path';
import { BlobCorruptError, BlobNotFoundError, getJson, onceByName, putJson } from '../../src/store/blob-store';
import { tempStore } from '../helpers/store';

const bytes = (s: string) => new TextEncoder().encode(s);

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

describe('FsBlobStore', () => {
  it('stores equal content once, however often and concurrently it is written', async () => {
    const store = tempStore('idem');
    const refs = await Promise.all(Array.from({ length: 20 }, () => store.put(bytes('same payload'), 'tokens')));
    expect(new Set(refs.map((r) => r.sha256)).size).toBe(1);
    expect(filesUnder(path.join(store.root, 'blobs'))).toHaveLength(1);
    await store.put(bytes('same payload'), 'tokens');
    expect(filesUnder(path.join(store.root, 'blobs'))).toHaveLength(1);
    expect(new TextDecoder().decode(await store.get(refs[0]!))).toBe('same payload');
  });

  it('leaves no temp files behind', async () => {
    const store = tempStore('tmp');
    await Promise.all([store.put(bytes('a'), 'x'), store.put(bytes('a'), 'x'), store.nameIfAbsent('n/a', await store.put(bytes('b'), 'x'))]);
    expect(filesUnder(store.root).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('nameIfAbsent keeps the first writer, so a retried step cannot write its checkpoint twice', async () => {
    const store = tempStore('names');
    const first = await store.put(bytes('attempt 1'), 'checkpoint');
    const second = await store.put(bytes('attempt 2'), 'checkpoint');
    const results = await Promise.all([store.nameIfAbsent('runs/r/ckpt/step-1', first), store.nameIfAbsent('runs/r/ckpt/step-1', second)]);
    expect(results[0]).toEqual(results[1]);
    expect(await store.getName('runs/r/ckpt/step-1')).toEqual(results[0]);
    expect(await store.listNames('runs/r/ckpt/')).toEqual(['runs/r/ckpt/step-1']);
  });

  it('setName replaces, getName of a missing name is undefined', async () => {
    const store = tempStore('set');
    const a = await store.put(bytes('a'), 'onnx');
    const b = await store.put(bytes('b'), 'onnx');
    expect(await store.getName('w/latest')).toBeUndefined();
    await store.setName('w/latest', a);
    await store.setName('w/latest', b);
    expect(await store.getName('w/latest')).toEqual(b);
  });

  it('round-trips JSON and reports missing or corrupt blobs with typed errors', async () => {
    const store = tempStore('err');
    const ref = await putJson(store, { tokens: [1, 2, 3] }, 'tokens');
    expect(await getJson(store, ref)).toEqual({ tokens: [1, 2, 3] });
    await expect(store.get({ ...ref, sha256: 'f'.repeat(64) })).rejects.toBeInstanceOf(BlobNotFoundError);
    fs.writeFileSync(path.join(store.root, 'blobs', ref.sha256.slice(0, 2), ref.sha256.slice(2)), 'tampered');
    await expect(store.get(ref)).rejects.toBeInstanceOf(BlobCorruptError);
  });

  it('rejects names and digests that could escape the store', async () => {
    const store = tempStore('bad');
    const ref = await store.put(bytes('x'), 'x');
    await expect(store.setName('../escape', ref)).rejects.toThrow(/invalid blob name/);
    await expect(store.get({ ...ref, sha256: '../../etc/passwd' })).rejects.toThrow(/not a sha256/);
  });
});

describe('onceByName', () => {
  it('computes once, then returns the stored result to later attempts', async () => {
    const store = tempStore('once');
    let calls = 0;
    const compute = async () => ({ attempt: ++calls });
    expect(await onceByName(store, 'runs/r/sft/to-step-1', 'sft-chunk', compute)).toEqual({ attempt: 1 });
    expect(await onceByName(store, 'runs/r/sft/to-step-1', 'sft-chunk', compute)).toEqual({ attempt: 1 });
    expect(calls).toBe(1);
  });

  it('keeps the first writer when two attempts race', async () => {
    const store = tempStore('once-race');
    let calls = 0;
    const compute = async () => ({ attempt: ++calls });
    const results = await Promise.all([0, 1, 2].map(() => onceByName(store, 'x/y', 'k', compute)));
    expect(new Set(results.map((r) => r.attempt)).size).toBe(1);
  });
});
