import { loadTokenizer } from '../../../src/model/tokenizer';
import { tokenizeSegments } from '../../../src/model/tokenizer';
import {
  executeChunk,
  generateLayouts,
  gridObservation,
  gridSftExamples,
  layoutFromId,
  MOVES,
  oraclePlan,
  parseObservation,
  shortestPath,
  splitOf,
  heldOutLayouts,
  heldOutPartOf,
  inLayoutSet,
  type GridLayout,
} from '../../../src/tasks/grid';

const shape = { rows: 5, cols: 5, walls: 4 };

describe('grid layouts', () => {
  it('are distinct, reachable, in their split, and the same for the same seed', () => {
    const train = generateLayouts({ seed: 7, count: 200, split: 'train', shape });
    const heldout = generateLayouts({ seed: 7, count: 50, split: 'heldout', shape });
    expect(new Set(train.map((l) => l.id)).size).toBe(200);
    expect(train.every((l) => splitOf(l.id) === 'train')).toBe(true);
    expect(heldout.every((l) => splitOf(l.id) === 'heldout')).toBe(true);
    const trainIds = new Set(train.map((l) => l.id));
    expect(heldout.some((l) => trainIds.has(l.id))).toBe(false);
    for (const l of [...train, ...heldout]) {
      expect(l.cells.join('').split('#')).toHaveLength(shape.walls + 1);
      expect(shortestPath(l, l.start, l.goal)).toHaveLength(l.distance);
      expect(l.distance).toBeGreaterThanOrEqual(2);
      expect(layoutFromId(l.id)).toEqual(l);
    }
    expect(generateLayouts({ seed: 7, count: 200, split: 'train', shape })).toEqual(train);
  });

  it('halve the held-out split into validation and test parts that share no layout with each other or with training', () => {
    const validation = generateLayouts({ seed: 7, count: 150, split: 'validation', shape });
    const test = generateLayouts({ seed: 7, count: 150, split: 'test', shape });
    expect(validation.every((l) => splitOf(l.id) === 'heldout' && heldOutPartOf(l.id) === 'validation')).toBe(true);
    expect(test.every((l) => splitOf(l.id) === 'heldout' && heldOutPartOf(l.id) === 'test')).toBe(true);
    const validationIds = new Set(validation.map((l) => l.id));
    expect(test.filter((l) => validationIds.has(l.id))).toEqual([]);
    // Every held-out layout is in exactly one part, and the parts are about even.
    const heldout = generateLayouts({ seed: 3, count: 400, split: 'heldout', shape });
    const inTest = heldout.filter((l) => inLayoutSet(l.id, 'test')).length;
    expect(heldout.every((l) => inLayoutSet(l.id, 'test') !== inLayoutSet(l.id, 'validation'))).toBe(true);
    expect(inTest).toBeGreaterThan(150);
    expect(inTest).toBeLessThan(250);
    // The evaluations' layouts: a part when asked, the whole held-out split when not (runs recorded before the parts).
    expect(heldOutLayouts(7, 40, shape, 'test').every((l) => inLayoutSet(l.id, 'test'))).toBe(true);
    expect(heldOutLayouts(7, 40, shape, 'validation').every((l) => inLayoutSet(l.id, 'validation'))).toBe(true);
    expect(new Set(heldOutLayouts(7, 80, shape).map((l) => heldOutPartOf(l.id))).size).toBe(2);
  });

  it('refuse impossible shapes and malformed ids with a typed error', () => {
    expect(() => generateLayouts({ seed: 1, count: 1, split: 'train', shape: { rows: 2, cols: 2, walls: 3 } })).toThrow(/no room/);
    expect(() => generateLayouts({ seed: 1, count: 500, split: 'train', shape: { rows: 2, cols: 2, walls: 0 } })).toThrow(/could not find 500/);
    for (const id of ['', 'A.G/..', 'A..', 'AG./A..', 'A#./###/..G']) expect(() => layoutFromId(id)).toThrow(/layout/);
  });
});

describe('grid dynamics and oracle', () => {
  const layout: GridLayout = layoutFromId(['A.#..', '..#..', '.....', '.#...', '....G'].join('/'));

  it('walls and edges stop a move; the goal ends the chunk', () => {
    expect(executeChunk(layout, layout.start, ['U', 'L', 'R', 'R'])).toMatchObject({ executed: 4, position: { row: 0, col: 1 }, bumps: 3, reachedGoal: false });
    const path = shortestPath(layout, layout.start, layout.goal)!;
    expect(path).toHaveLength(8);
    const outcome = executeChunk(layout, layout.start, [...path, 'U', 'U']);
    expect(outcome).toMatchObject({ executed: 8, reachedGoal: true, position: layout.goal, bumps: 0 });
  });

  it('oracle plans are H moves: a shortest path cut at H, or padded with waits at the goal', () => {
    expect(oraclePlan(layout, layout.start, 5)).toEqual(shortestPath(layout, layout.start, layout.goal)!.slice(0, 5));
    const long = oraclePlan(layout, layout.start, 15);
    expect(long.slice(8)).toEqual(Array(7).fill('X'));
    expect(executeChunk(layout, layout.start, long).reachedGoal).toBe(true);
  });

  it('observations read back to the agent, the grid and H', () => {
    const text = gridObservation(layout, { row: 2, col: 3 }, 10);
    expect(text).toBe('Grid:\n..#..\n..#..\n...A.\n.#...\n....G\nPlan 10:\n');
    expect(parseObservation(text)).toEqual({ layoutId: '..#../..#../...A./.#.../....G', at: { row: 2, col: 3 }, horizon: 10 });
    expect(parseObservation('Evaluate: 1+2\n')).toBeNull();
  });
});

describe('grid tokens', () => {
  const tokenizer = loadTokenizer();

  it('every move is one token and no run of moves merges, so move k of a plan is token k', () => {
    const runs: string[] = [];
    for (const a of MOVES) for (const b of MOVES) for (const c of MOVES) runs.push(a + b + c);
    for (const run of runs) expect(tokenizer.encode(run)).toHaveLength(3);
    expect(tokenizer.encode('Plan 5:\nURDLX').slice(-5).map((id) => tokenizer.decode([id]))).toEqual(['U', 'R', 'D', 'L', 'X']);
  });

  it('SFT examples train on the plan and its end only, and fit a small context', () => {
    const [layout] = generateLayouts({ seed: 3, count: 1, split: 'train', shape });
    const examples = gridSftExamples(layout!, [5, 10, 15]);
    expect(new Set(examples.map((e) => e.horizon))).toEqual(new Set([5, 10, 15]));
    for (const ex of examples) {
      const { tokens, lossMask } = tokenizeSegments(tokenizer, ex.segments);
      expect(tokens.length).toBeLessThan(80);
      // H moves and the end-of-turn token are trained; the observation is not.
      expect(lossMask.filter((m) => m === 1)).toHaveLength(ex.horizon + 1);
      expect(lossMask.slice(0, tokens.length - ex.horizon - 1).every((m) => m === 0)).toBe(true);
    }
  });
});
