/** Shortest paths by breadth-first search: the oracle behind SFT demonstrations. */
import type { Cell, GridLayout } from './types';
import { MOVE_DELTA, type Move } from './moves';

type Shape = Pick<GridLayout, 'rows' | 'cols' | 'cells'>;

/** The moves of a shortest path from `from` to `to` (ties broken in U, D, L, R order), or null if none. */
export function shortestPath(shape: Shape, from: Cell, to: Cell): Move[] | null {
  const key = (c: Cell) => c.row * shape.cols + c.col;
  const free = (c: Cell) => c.row >= 0 && c.row < shape.rows && c.col >= 0 && c.col < shape.cols && shape.cells[c.row]![c.col] === '.';
  if (!free(from) || !free(to)) return null;
  const prev = new Map<number, { cell: Cell; move: Move } | null>([[key(from), null]]);
  const queue: Cell[] = [from];
  for (let head = 0; head < queue.length; head++) {
    const cell = queue[head]!;
    if (cell.row === to.row && cell.col === to.col) break;
    for (const move of ['U', 'D', 'L', 'R'] as const) {
      const next = { row: cell.row + MOVE_DELTA[move].row, col: cell.col + MOVE_DELTA[move].col };
      if (!free(next) || prev.has(key(next))) continue;
      prev.set(key(next), { cell, move });
      queue.push(next);
    }
  }
  if (!prev.has(key(to))) return null;
  const moves: Move[] = [];
  for (let step = prev.get(key(to)); step; step = prev.get(key(step.cell))) moves.unshift(step.move);
  return moves;
}

/**
 * The oracle's plan of exactly `horizon` moves from `from`: a shortest path, cut at `horizon`, or
 * padded with X (wait) once at the goal. Moves after the goal are never executed (the episode ends).
 */
export function oraclePlan(layout: GridLayout, from: Cell, horizon: number): Move[] {
  const path = shortestPath(layout, from, layout.goal);
  if (path === null) throw new Error(`no path from ${from.row},${from.col} to the goal of ${layout.id}`);
  return [...path.slice(0, horizon), ...Array<Move>(Math.max(0, horizon - path.length)).fill('X')];
}
