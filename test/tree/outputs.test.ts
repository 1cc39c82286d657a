import { mulberry32 } from '../../src/domain/rng';
import { buildForest, leaves, sampleOutputs, type Forest } from '../../src/tree';
import { clone, expectTreeError, scripted, step } from './helpers';

/** r0 has five leaves (r0.1 … r0.5); r1 has two (r1.1.1, r1.2); r2 none yet (r2.1 pending). */
function forest(): Forest {
  let f = buildForest(3, [5, 2, 1]);
  for (let k = 1; k <= 5; k++) f = step(f, `r0.${k}`, 'eos');
  f = step(f, 'r1.1', 'tool-call');
  f = step(f, 'r1.1.1', 'eos');
  f = step(f, 'r1.2', 'length');
  return f;
}

describe('sampleOutputs', () => {
  it('gives n distinct leaves when the tree has enough', () => {
    const f = forest();
    for (let seed = 0; seed < 100; seed++) {
      const out = sampleOutputs(f, 0, 3, mulberry32(seed));
      expect(out).toHaveLength(3);
      expect(out.every((o) => !o.duplicate)).toBe(true);
      expect(new Set(out.map((o) => o.id)).size).toBe(3);
      for (const o of out) expect(leaves(f, 0)).toContain(o.id);
    }
    expect(sampleOutputs(f, 0, 5, mulberry32(3)).map((o) => o.id).sort()).toEqual(['r0.1', 'r0.2', 'r0.3', 'r0.4', 'r0.5']);
  });

  it('draws uniformly (partial Fisher–Yates over the leaves in preorder)', () => {
    expect(sampleOutputs(forest(), 0, 2, scripted([0]))).toEqual([{ id: 'r0.1', duplicate: false }, { id: 'r0.2', duplicate: false }]);
    expect(sampleOutputs(forest(), 0, 2, scripted([0.99, 0.99]))).toEqual([{ id: 'r0.5', duplicate: false }, { id: 'r0.1', duplicate: false }]);
  });

  it('gives every leaf once then marked duplicates, exactly n, when the tree has fewer', () => {
    const f = forest();
    expect(sampleOutputs(f, 1, 5, scripted([0]))).toEqual([
      { id: 'r1.1.1', duplicate: false },
      { id: 'r1.2', duplicate: false },
      { id: 'r1.1.1', duplicate: true },
      { id: 'r1.2', duplicate: true },
      { id: 'r1.1.1', duplicate: true },
    ]);
    for (let seed = 0; seed < 100; seed++) {
      const out = sampleOutputs(f, 1, 5, mulberry32(seed));
      expect(out).toHaveLength(5);
      expect(out.filter((o) => o.duplicate)).toHaveLength(3);
      expect(new Set(out.slice(0, 2).map((o) => o.id))).toEqual(new Set(['r1.1.1', 'r1.2']));
      const copies = out.filter((o) => o.id === 'r1.2').length;
      expect([2, 3]).toContain(copies);
    }
  });

  it('spreads the extra copy over the leaves, not always the first', () => {
    const f = forest();
    const extra = new Set<string>();
    for (let seed = 0; seed < 50; seed++) extra.add(sampleOutputs(f, 1, 3, mulberry32(seed))[2]!.id);
    expect(extra).toEqual(new Set(['r1.1.1', 'r1.2']));
  });

  it('is reproducible for a given seed and leaves the forest untouched', () => {
    const f = forest();
    const before = clone(f);
    expect(sampleOutputs(f, 0, 4, mulberry32(11))).toEqual(sampleOutputs(f, 0, 4, mulberry32(11)));
    expect(sampleOutputs(f, 1, 7, mulberry32(11))).toEqual(sampleOutputs(f, 1, 7, mulberry32(11)));
    expect(f).toEqual(before);
  });

  it('refuses a tree with no leaf, and bad n', () => {
    expectTreeError(() => sampleOutputs(forest(), 2, 4, mulberry32(1)), 'no-leaves', 'r2');
    expect(sampleOutputs(forest(), 2, 0, mulberry32(1))).toEqual([]);
    expectTreeError(() => sampleOutputs(forest(), 0, 1.5, mulberry32(1)), 'bad-argument');
  });
});
