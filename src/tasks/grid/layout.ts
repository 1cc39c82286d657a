/**
 * Grid-world layouts: a rows × cols grid of free cells ('.') and walls ('#'), a start and a goal.
 * Seeded generation and a train / held-out split that is a pure function of the layout (as the
 * arithmetic task's), so no seed or count can ever put a held-out layout into training.
 */
import { fnv1a32, mulberry32, randInt } from '../../domain/rng';
import { shortestPath } from './oracle';
import type { Cell, GridLayout } from './types';

export type { Cell, GridLayout } from './types';

export type GridSplit = 'train' | 'heldout';
/**
 * What generateLayouts draws from: a split, or one part of the held-out split. The held-out layouts
 * are halved once more by the layout's hash into validation (curves, setting choices) and test (each
 * compared policy once, for the reported results), so choices need never look at a test layout.
 */
export type GridLayoutSet = GridSplit | HeldOutPart;
export type HeldOutPart = 'validation' | 'test';


export interface GridShape {
  rows: number;
  cols: number;
  /** Walls per layout. */
  walls: number;
}

/** Share of all layouts in the held-out split. Fixed, so every run agrees. */
export const HELD_OUT_PERCENT = 20;

export function layoutId(cells: readonly string[], start: Cell, goal: Cell): string {
  return cells
    .map((line, r) =>
      [...line].map((ch, c) => (r === start.row && c === start.col ? 'A' : r === goal.row && c === goal.col ? 'G' : ch)).join(''),
    )
    .join('/');
}

export function splitOf(id: string): GridSplit {
  return fnv1a32(`grid-split:${id}`) % 100 < HELD_OUT_PERCENT ? 'heldout' : 'train';
}

/** The part of the held-out split a held-out layout belongs to (a hash of its own, apart from splitOf's). */
export function heldOutPartOf(id: string): HeldOutPart {
  // Not % 2: FNV-1a's lowest bit is the parity of the odd characters, the same for every layout of a shape.
  return fnv1a32(`grid-heldout-part:${id}`) % 100 < 50 ? 'validation' : 'test';
}

/** Whether a layout is in the given set. */
export function inLayoutSet(id: string, set: GridLayoutSet): boolean {
  if (set === 'train' || set === 'heldout') return splitOf(id) === set;
  return splitOf(id) === 'heldout' && heldOutPartOf(id) === set;
}

export function isFree(layout: Pick<GridLayout, 'rows' | 'cols' | 'cells'>, cell: Cell): boolean {
  return cell.row >= 0 && cell.row < layout.rows && cell.col >= 0 && cell.col < layout.cols && layout.cells[cell.row]![cell.col] === '.';
}

export class GridLayoutError extends Error {
  override readonly name = 'GridLayoutError';
}

/**
 * `count` distinct layouts of `split` (a split, or a part of the held-out one), in a fixed order for (seed, shape). Every layout's goal is
 * reachable and at least two moves from the start, so no episode is won by chance on its first move.
 */
export function generateLayouts(opts: { seed: number; count: number; split: GridLayoutSet; shape: GridShape }): GridLayout[] {
  const { rows, cols, walls } = opts.shape;
  if (walls > rows * cols - 2) throw new GridLayoutError(`${walls} walls leave no room for a start and a goal in a ${rows}x${cols} grid`);
  const rng = mulberry32(fnv1a32(`grid:${opts.seed}:${opts.split}`));
  const seen = new Set<string>();
  const out: GridLayout[] = [];
  const maxAttempts = 1000 + opts.count * 200;
  for (let attempt = 0; out.length < opts.count; attempt++) {
    if (attempt >= maxAttempts) {
      throw new GridLayoutError(`could not find ${opts.count} distinct ${opts.split} layouts of ${rows}x${cols} with ${walls} walls (found ${out.length})`);
    }
    const grid = Array.from({ length: rows }, () => Array.from({ length: cols }, () => '.'));
    for (let w = 0; w < walls; ) {
      const r = randInt(rng, 0, rows - 1);
      const c = randInt(rng, 0, cols - 1);
      if (grid[r]![c] === '.') {
        grid[r]![c] = '#';
        w++;
      }
    }
    const cells = grid.map((line) => line.join(''));
    const free: Cell[] = [];
    cells.forEach((line, row) => [...line].forEach((ch, col) => ch === '.' && free.push({ row, col })));
    const start = free[randInt(rng, 0, free.length - 1)]!;
    const goal = free[randInt(rng, 0, free.length - 1)]!;
    const shape = { rows, cols, cells };
    const path = shortestPath(shape, start, goal);
    if (path === null || path.length < 2) continue;
    const id = layoutId(cells, start, goal);
    if (seen.has(id) || !inLayoutSet(id, opts.split)) continue;
    seen.add(id);
    out.push({ id, rows, cols, cells, start, goal, distance: path.length });
  }
  return out;
}

/**
 * The held-out layouts evaluations use (their own seed stream, apart from training's): `part` of
 * the held-out split, or the whole split (runs recorded before the parts).
 */
export function heldOutLayouts(seed: number, count: number, shape: GridShape, part?: HeldOutPart): GridLayout[] {
  return generateLayouts({ seed: seed ^ 0x6e1d_0e7a, count, split: part ?? 'heldout', shape });
}

/** The layout back from its id (activity inputs and histories carry the id only). */
export function layoutFromId(id: string): GridLayout {
  const lines = id.split('/');
  const cols = lines[0]?.length ?? 0;
  if (lines.length === 0 || cols === 0 || lines.some((l) => l.length !== cols || !/^[.#AG]+$/.test(l))) {
    throw new GridLayoutError(`not a grid layout id: ${JSON.stringify(id)}`);
  }
  const find = (ch: string): Cell => {
    const row = lines.findIndex((l) => l.includes(ch));
    if (row < 0 || lines.join('').split(ch).length !== 2) throw new GridLayoutError(`layout ${JSON.stringify(id)} needs exactly one '${ch}'`);
    return { row, col: lines[row]!.indexOf(ch) };
  };
  const start = find('A');
  const goal = find('G');
  const cells = lines.map((l) => l.replace(/[AG]/g, '.'));
  const path = shortestPath({ rows: lines.length, cols, cells }, start, goal);
  if (path === null) throw new GridLayoutError(`layout ${JSON.stringify(id)} has no path from A to G`);
  return { id, rows: lines.length, cols, cells, start, goal, distance: path.length };
}
