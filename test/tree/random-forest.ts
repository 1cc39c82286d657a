/**
 * A seeded random driver that grows forests the way the tree-rollout workflow does (build, grow
 * every pending node, branch after each tool call, expansion rounds, score the leaves), with
 * random sizes, tool-call limits, modes and beams, and a callback after every operation so a test
 * can check invariants at each step rather than only at the end.
 */
import { pick, randInt, type Rng } from '../../src/domain/rng';
import {
  addBranch,
  buildForest,
  completeSegment,
  expandable,
  getNode,
  pendingNodes,
  scoreLeaf,
  selectExpansionNodes,
  type ExpansionMode,
  type Forest,
  type SegmentEnd,
} from '../../src/tree';

export interface GrownForest {
  forest: Forest;
  toolLimit: number;
  /** Every selectExpansionNodes result with the tree it was for and the forest it was drawn from. */
  selections: Array<{ root: number; mode: ExpansionMode; n: number; ids: string[]; candidates: string[] }>;
  /** How often each kind of event happened, so a test can tell the driver reached every corner. */
  events: Record<string, number>;
}

export function growRandomForest(rng: Rng, after: (forest: Forest, what: string) => void): GrownForest {
  const events: Record<string, number> = {};
  const count = (what: string): void => {
    events[what] = (events[what] ?? 0) + 1;
  };
  const rootCount = randInt(rng, 1, 4);
  const initial = rng() < 0.5 ? randInt(rng, 1, 3) : Array.from({ length: rootCount }, () => randInt(rng, 1, 3));
  const toolLimit = randInt(rng, 0, 3);
  const toolRate = 0.2 + 0.5 * rng();
  let forest = buildForest(rootCount, initial);
  after(forest, 'build');

  const growAll = (): void => {
    for (let pending = pendingNodes(forest); pending.length > 0; pending = pendingNodes(forest)) {
      // Completion order varies, as activities finishing in any order would make it.
      const order = pending.map((id) => ({ id, key: rng() })).sort((a, b) => a.key - b.key);
      for (const { id } of order) {
        const parent = getNode(forest, getNode(forest, id).parent!);
        let end: SegmentEnd;
        if (rng() < toolRate) end = parent.toolCalls < toolLimit ? 'tool-call' : 'tool-limit';
        // Cuts at tree.segmentTokens only while shallow, so chains still end.
        else if (getNode(forest, id).depth < 4 && rng() < 0.2) end = 'segment-length';
        else end = pick(rng, ['eos', 'eos', 'length', 'bad-tool-call'] as const);
        count(end);
        forest = completeSegment(forest, id, {
          generatedTokens: randInt(rng, 1, 40),
          envTokens: end === 'tool-call' ? randInt(rng, 1, 8) : 0,
          entropy: rng(),
          end,
          ...(rng() < 0.5 ? { segment: { sha256: `sha-${id}`, bytes: 100, kind: 'segment' } } : {}),
        });
        after(forest, `complete ${id}`);
        if (end === 'tool-call' || end === 'segment-length') {
          forest = addBranch(forest, id).forest;
          after(forest, `continue ${id}`);
        }
      }
    }
  };
  growAll();

  const selections: GrownForest['selections'] = [];
  const iterations = randInt(rng, 0, 3);
  for (let it = 0; it < iterations; it++) {
    const beam = randInt(rng, 1, 3);
    for (let r = 0; r < rootCount; r++) {
      const mode: ExpansionMode = rng() < 0.5 ? 'random' : 'entropy';
      const n = randInt(rng, 0, 4);
      const candidates = expandable(forest, r);
      const ids = selectExpansionNodes(forest, r, n, mode, rng);
      selections.push({ root: r, mode, n, ids, candidates });
      if (ids.length > candidates.length) count('with-replacement');
      count(`select-${mode}`);
      for (const id of ids) {
        for (let b = 0; b < beam; b++) {
          forest = addBranch(forest, id).forest;
          after(forest, `branch ${id}`);
        }
      }
    }
    growAll();
  }

  for (const id of Object.keys(forest.nodes)) {
    if (forest.nodes[id]!.status !== 'leaf' || rng() < 0.1) continue;
    forest = scoreLeaf(forest, id, rng() < 0.5 ? 1 : 0);
    after(forest, `score ${id}`);
  }
  return { forest, toolLimit, selections, events };
}
