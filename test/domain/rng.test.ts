/**
 * The project's one generator and seed deriver give the numbers recorded in
 * test/fixtures/rng-vectors.json (recorded before src/model/rng.ts and src/domain/rng.ts were
 * merged): the main job's batches, initial weights and problem draws are reproduced by seed, and
 * python/tests/test_rng.py holds the torch port to the same file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fillNormal, fnv1a32, mixSeed, mulberry32, uniformHash } from '../../src/domain/rng';

interface Vectors {
  mixSeed: Array<[number, number, number]>;
  uniformHash: Array<[string, number]>;
  fnv1a32: Array<[string, number]>;
  deriveSeed: Array<[number, string, number]>;
  mulberry32: Array<[number, number[]]>;
  fillNormal: Array<[number, number, number[]]>;
}
const vectors = JSON.parse(fs.readFileSync(path.join(__dirname, '../fixtures/rng-vectors.json'), 'utf8')) as Vectors;

test('mixSeed gives the recorded stream seeds', () => {
  expect(vectors.mixSeed.map(([seed, stream]) => mixSeed(seed, stream))).toEqual(vectors.mixSeed.map(([, , want]) => want));
});

test('uniformHash and fnv1a32 give the recorded hashes', () => {
  expect(vectors.uniformHash.map(([text]) => uniformHash(text))).toEqual(vectors.uniformHash.map(([, want]) => want));
  expect(vectors.fnv1a32.map(([text]) => fnv1a32(text))).toEqual(vectors.fnv1a32.map(([, want]) => want));
});

test('a stream named by text is the fnv1a32 of seed and name, as the retired deriveSeed made it', () => {
  expect(vectors.deriveSeed.map(([seed, label]) => fnv1a32(`${seed >>> 0}:${label}`))).toEqual(vectors.deriveSeed.map(([, , want]) => want));
});

test('mulberry32 and fillNormal give the recorded draws', () => {
  for (const [seed, want] of vectors.mulberry32) {
    const rand = mulberry32(seed);
    expect(want.map(() => rand())).toEqual(want);
  }
  for (const [seed, std, want] of vectors.fillNormal) {
    expect(Array.from(fillNormal(new Float32Array(want.length), std, mulberry32(seed)))).toEqual(want);
  }
});
