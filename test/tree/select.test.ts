import { mulberry32 } from '../../src/domain/rng';
import { branchEntropy, buildForest, expandable, selectExpansionNodes, type Forest } from '../../src/tree';
import { clone, expectTreeError, scripted, step } from './helpers';

/**
 * Three open nodes with known branch entropies (floor 0.05 on top):
 *   r0   : children r0.1, r0.2, r0.3 with entropies 0.1, 0.1, 0.1 → 0.10 (weight 0.15)
 *   r0.1 : continuation r0.1.1 with entropy 0.9                    → 0.90 (weight 0.95)
 *   r0.2 : continuation r0.2.1 with entropy 0.05                   → 0.05 (weight 0.10)
 * plus leaves (r0.3, r0.1.1, r0.2.1) and, in the second tree, a pending node.
 */
function forest(): Forest {
  let f = buildForest(2, [3, 1]);
  f = step(f, 'r0.1', 'tool-call', { entropy: 0.1 });
  f = step(f, 'r0.2', 'tool-call', { entropy: 0.1 });
  f = step(f, 'r0.3', 'eos', { entropy: 0.1 });
  f = step(f, 'r0.1.1', 'eos', { entropy: 0.9 });
  f = step(f, 'r0.2.1', 'length', { entropy: 0.05 });
  return f;
}

const tally = (ids: string[]): Record<string, number> => ids.reduce<Record<string, number>>((t, id) => ({ ...t, [id]: (t[id] ?? 0) + 1 }), {});

describe('branchEntropy', () => {
  it('is the mean entropy of the generated children, 0 without any', () => {
    const f = forest();
    expect(branchEntropy(f, 'r0')).toBeCloseTo(0.1, 12);
    expect(branchEntropy(f, 'r0.1')).toBe(0.9);
    expect(branchEntropy(f, 'r0.2')).toBe(0.05);
    expect(branchEntropy(f, 'r0.3')).toBe(0);
    expect(branchEntropy(f, 'r1')).toBe(0); // its only child is pending
  });
});

describe('selectExpansionNodes', () => {
  it('chooses only open nodes: the root and tool-call segments, never pending nodes or leaves', () => {
    const f = forest();
    expect(expandable(f, 0)).toEqual(['r0', 'r0.1', 'r0.2']);
    const rng = mulberry32(7);
    const seen = new Set<string>();
    for (let i = 0; i < 300; i++) {
      for (const mode of ['random', 'entropy'] as const) {
        const picked = selectExpansionNodes(f, i % 2, 1 + (i % 6), mode, rng);
        expect(picked).toHaveLength(1 + (i % 6));
        for (const id of picked) {
          expect(f.nodes[id]!.status).toBe('open');
          seen.add(id);
        }
      }
    }
    expect([...seen].sort()).toEqual(['r0', 'r0.1', 'r0.2', 'r1']);
  });

  it('with includeRoot false, branches only below the root, and from the root when nothing below it is open', () => {
    const f = forest();
    const rng = mulberry32(11);
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      for (const mode of ['random', 'entropy'] as const) {
        for (const id of selectExpansionNodes(f, 0, 1 + (i % 4), mode, rng, { includeRoot: false })) seen.add(id);
        // Tree 1 has only its root open (its one child is pending): the root is the fallback.
        expect(selectExpansionNodes(f, 1, 2, mode, rng, { includeRoot: false })).toEqual(['r1', 'r1']);
      }
    }
    expect([...seen].sort()).toEqual(['r0.1', 'r0.2']);
    // Segments cut inside a turn are branch points too.
    let g = buildForest(1, 1);
    g = step(g, 'r0.1', 'segment-length', { entropy: 0.3 });
    g = step(g, 'r0.1.1', 'eos');
    expect(selectExpansionNodes(g, 0, 3, 'random', rng, { includeRoot: false })).toEqual(['r0.1', 'r0.1', 'r0.1']);
  });

  it('leaves the forest untouched', () => {
    const f = forest();
    const before = clone(f);
    selectExpansionNodes(f, 0, 5, 'entropy', mulberry32(1));
    selectExpansionNodes(f, 0, 2, 'random', mulberry32(1));
    expect(f).toEqual(before);
  });

  it('entropy mode picks the high-entropy branch point far more often', () => {
    const f = forest();
    const rng = mulberry32(2024);
    const draws = 4000;
    const t = tally(Array.from({ length: draws }, () => selectExpansionNodes(f, 0, 1, 'entropy', rng)[0]!));
    // Weights 0.15 : 0.95 : 0.10 of 1.2 → expected shares 0.125, 0.792, 0.083.
    expect(t['r0.1']! / draws).toBeGreaterThan(0.76);
    expect(t['r0.1']! / draws).toBeLessThan(0.82);
    expect(t['r0.1']!).toBeGreaterThan(5 * t['r0']!);
    expect(t['r0.1']!).toBeGreaterThan(5 * t['r0.2']!);
    expect(t['r0']!).toBeGreaterThan(t['r0.2']!);
  });

  it('random mode is uniform over the open nodes', () => {
    const f = forest();
    const rng = mulberry32(99);
    const draws = 6000;
    const t = tally(Array.from({ length: draws }, () => selectExpansionNodes(f, 0, 1, 'random', rng)[0]!));
    for (const id of ['r0', 'r0.1', 'r0.2']) {
      expect(Math.abs(t[id]! / draws - 1 / 3)).toBeLessThan(0.03);
    }
  });

  it('is reproducible for a given seed', () => {
    const f = forest();
    for (const mode of ['random', 'entropy'] as const) {
      for (const n of [1, 2, 3, 7]) {
        expect(selectExpansionNodes(f, 0, n, mode, mulberry32(5))).toEqual(selectExpansionNodes(f, 0, n, mode, mulberry32(5)));
      }
    }
  });

  it('draws by cumulative weight in preorder, one rng call per node (scripted rng)', () => {
    const f = forest();
    // Entropy weights [0.15, 0.95, 0.10], total 1.2. u = 0.5 · 1.2 = 0.6 falls in r0.1's share.
    expect(selectExpansionNodes(f, 0, 1, 'entropy', scripted([0]))).toEqual(['r0']);
    expect(selectExpansionNodes(f, 0, 1, 'entropy', scripted([0.5]))).toEqual(['r0.1']);
    expect(selectExpansionNodes(f, 0, 1, 'entropy', scripted([0.95]))).toEqual(['r0.2']);
    // Without replacement: after r0.1 the pool is r0 (0.15), r0.2 (0.10); u = 0.5 · 0.25 = 0.125 → r0.
    const rng = scripted([0.5, 0.5]);
    expect(selectExpansionNodes(f, 0, 2, 'entropy', rng)).toEqual(['r0.1', 'r0']);
    expect(rng.calls).toBe(2);
    // Random mode, partial Fisher–Yates: 0.99 swaps the last candidate to the front.
    expect(selectExpansionNodes(f, 0, 2, 'random', scripted([0.99, 0]))).toEqual(['r0.2', 'r0.1']);
  });

  it('without replacement when there are enough candidates', () => {
    const f = forest();
    for (let seed = 0; seed < 200; seed++) {
      for (const mode of ['random', 'entropy'] as const) {
        const picked = selectExpansionNodes(f, 0, 3, mode, mulberry32(seed));
        expect([...picked].sort()).toEqual(['r0', 'r0.1', 'r0.2']);
      }
    }
  });

  it('with replacement when there are too few: entropy mode takes every candidate first', () => {
    const f = forest();
    let randomMissed = 0;
    for (let seed = 0; seed < 200; seed++) {
      const entropy = selectExpansionNodes(f, 0, 5, 'entropy', mulberry32(seed));
      expect(entropy).toHaveLength(5);
      expect([...entropy.slice(0, 3)].sort()).toEqual(['r0', 'r0.1', 'r0.2']);
      const random = selectExpansionNodes(f, 0, 5, 'random', mulberry32(seed));
      expect(random).toHaveLength(5);
      if (new Set(random).size < 3) randomMissed++;
    }
    // As in the design, random mode draws all n with replacement, so it sometimes misses a candidate.
    expect(randomMissed).toBeGreaterThan(0);
  });

  it('gives nothing for n = 0 and refuses bad arguments', () => {
    const f = forest();
    expect(selectExpansionNodes(f, 0, 0, 'entropy', mulberry32(1))).toEqual([]);
    expectTreeError(() => selectExpansionNodes(f, 0, -1, 'random', mulberry32(1)), 'bad-argument');
    expectTreeError(() => selectExpansionNodes(f, 0, 1, 'greedy' as never, mulberry32(1)), 'bad-argument');
    expectTreeError(() => selectExpansionNodes(f, 0, 1, 'entropy', mulberry32(1), { entropyFloor: 0 }), 'bad-argument');
    expectTreeError(() => selectExpansionNodes(f, 5, 1, 'random', mulberry32(1)), 'unknown-root');
  });
});
