import { mulberry32 } from '../../src/domain/rng';
import {
  checkInvariants,
  forestSummary,
  generatedTokens,
  leaves,
  nodeValues,
  pathTo,
  sampleOutputs,
  treeAdvantages,
  treeNodeIds,
  type Forest,
} from '../../src/tree';
import { growRandomForest } from './random-forest';
import { clone } from './helpers';

const FORESTS = 300;

describe('random forests grown by a seeded driver', () => {
  it('keep every invariant after every operation, and their derived views agree', () => {
    const events: Record<string, number> = {};
    let nodes = 0;
    let operations = 0;
    let duplicates = 0;
    for (let seed = 0; seed < FORESTS; seed++) {
      const rng = mulberry32(0x7ee + seed);
      let previous: { forest: Forest; snapshot: string } | null = null;
      const grown = growRandomForest(rng, (forest, what) => {
        operations++;
        try {
          checkInvariants(forest);
        } catch (err) {
          throw new Error(`seed ${seed}, after ${what}: ${String(err)}`);
        }
        // Every operation returned a new forest and left the one it was given alone.
        if (previous) {
          if (forest === previous.forest) throw new Error(`seed ${seed}: ${what} returned its input`);
          if (JSON.stringify(previous.forest) !== previous.snapshot) throw new Error(`seed ${seed}: ${what} changed its input`);
        }
        previous = { forest, snapshot: JSON.stringify(forest) };
      });
      const { forest, toolLimit } = grown;
      for (const [k, v] of Object.entries(grown.events)) events[k] = (events[k] ?? 0) + v;
      nodes += Object.keys(forest.nodes).length;

      // Expansion only ever chose open nodes of the right tree, as many as asked.
      for (const s of grown.selections) {
        expect(s.ids).toHaveLength(s.n);
        for (const id of s.ids) expect(s.candidates).toContain(id);
        if (s.n <= s.candidates.length) expect(new Set(s.ids).size).toBe(s.n);
      }

      // Tool calls along every path: the executed calls on it, never above the limit.
      // (Plain comparisons collected into one expect: a jest matcher per node is slow.)
      const wrong: string[] = [];
      for (const node of Object.values(forest.nodes)) {
        const calls = pathTo(forest, node.id).filter((id) => forest.nodes[id]!.end === 'tool-call').length;
        if (node.toolCalls !== calls || node.toolCalls > toolLimit || (node.end === 'tool-limit' && node.toolCalls !== toolLimit)) {
          wrong.push(`${node.id}: toolCalls ${node.toolCalls}, ${calls} on its path, limit ${toolLimit}, end ${String(node.end)}`);
        }
      }
      expect({ seed, wrong }).toEqual({ seed, wrong: [] });

      // Views agree with each other.
      const summary = forestSummary(forest);
      let tokens = 0;
      summary.forEach((s, r) => {
        expect(s.nodes).toBe(treeNodeIds(forest, r).length - 1);
        expect(s.nodes).toBe(s.leaves + (s.open - 1) + s.pending);
        expect(s.open).toBe(s.toolCalls + s.splits + 1);
        expect(s.pending).toBe(0);
        tokens += s.generatedTokens;
      });
      expect(generatedTokens(forest)).toBe(tokens);

      // Outputs: exactly n per root, duplicates only beyond the leaf count; sampling changes nothing.
      const before = clone(forest);
      for (let r = 0; r < forest.roots.length; r++) {
        const all = leaves(forest, r);
        const n = 1 + (seed % 9);
        const out = sampleOutputs(forest, r, n, rng);
        expect(out).toHaveLength(n);
        expect(out.filter((o) => o.duplicate)).toHaveLength(Math.max(0, n - all.length));
        expect(new Set(out.filter((o) => !o.duplicate).map((o) => o.id)).size).toBe(Math.min(n, all.length));
        for (const o of out) expect(all).toContain(o.id);
        duplicates += out.filter((o) => o.duplicate).length;

        // Advantages: finite, for exactly the segments with a scored leaf below.
        const values = nodeValues(forest, r);
        if (values[forest.roots[r]!] === undefined) continue;
        const adv = treeAdvantages(forest, r, { reweight: 'sqrt' });
        expect(Object.keys(adv)).toEqual(Object.keys(values).filter((id) => id !== forest.roots[r]));
        for (const a of Object.values(adv)) expect(Number.isFinite(a)).toBe(true);
      }
      expect(forest).toEqual(before);
      checkInvariants(forest);
    }
    // The driver reached every corner, so the checks above were exercised on all of them.
    for (const e of ['tool-call', 'segment-length', 'tool-limit', 'eos', 'length', 'bad-tool-call', 'select-random', 'select-entropy', 'with-replacement']) {
      expect(events[e] ?? 0).toBeGreaterThan(20);
    }
    expect(duplicates).toBeGreaterThan(0);
    expect(nodes).toBeGreaterThan(FORESTS * 5);
    expect(operations).toBeGreaterThan(FORESTS * 10);
  });

  it('are the same forest for the same seed', () => {
    for (const seed of [1, 2, 3]) {
      const a = growRandomForest(mulberry32(seed), () => undefined);
      const b = growRandomForest(mulberry32(seed), () => undefined);
      expect(a.forest).toEqual(b.forest);
      expect(a.selections).toEqual(b.selections);
    }
  });
});
