/**
 * The grid world's dynamics: a move into a wall or off the grid leaves the agent where it is; an
 * episode succeeds when a move ends on the goal, and the moves after it are not executed.
 */
import { isFree, type Cell, type GridLayout } from './layout';
import { MOVE_DELTA, type Move } from './moves';

export interface ChunkOutcome {
  /** Moves executed: all of them, or up to and including the one that reached the goal. */
  executed: number;
  /** The agent's cell after each executed move. */
  path: Cell[];
  position: Cell;
  reachedGoal: boolean;
  /** Executed moves that hit a wall or the edge. */
  bumps: number;
}

export function applyMove(layout: GridLayout, at: Cell, move: Move): Cell {
  const next = { row: at.row + MOVE_DELTA[move].row, col: at.col + MOVE_DELTA[move].col };
  return isFree(layout, next) ? next : at;
}

export function executeChunk(layout: GridLayout, from: Cell, moves: readonly Move[]): ChunkOutcome {
  let position = from;
  const path: Cell[] = [];
  let bumps = 0;
  for (const move of moves) {
    const next = applyMove(layout, position, move);
    if (move !== 'X' && next === position) bumps++;
    position = next;
    path.push(position);
    if (position.row === layout.goal.row && position.col === layout.goal.col) {
      return { executed: path.length, path, position, reachedGoal: true, bumps };
    }
  }
  return { executed: path.length, path, position, reachedGoal: false, bumps };
}
