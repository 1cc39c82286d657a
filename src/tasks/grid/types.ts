/** The grid world's plain shapes (layout.ts builds them, oracle.ts searches them). */

export interface Cell {
  row: number;
  col: number;
}

export interface GridLayout {
  /** The layout in one line (rows joined by '/', start 'A', goal 'G'): its identity and its name in the Web UI. */
  id: string;
  rows: number;
  cols: number;
  /** Row strings of '.' (free) and '#' (wall); start and goal are free cells. */
  cells: string[];
  start: Cell;
  goal: Cell;
  /** Moves on a shortest path from start to goal. */
  distance: number;
}
