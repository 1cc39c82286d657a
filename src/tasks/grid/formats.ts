/** What the policy reads: the grid with the agent (A) and the goal (G), then how many moves to plan. */
import type { Cell, GridLayout } from './layout';

export function gridObservation(layout: GridLayout, at: Cell, horizon: number): string {
  const rows = layout.cells.map((line, r) =>
    [...line].map((ch, c) => (r === at.row && c === at.col ? 'A' : r === layout.goal.row && c === layout.goal.col ? 'G' : ch)).join(''),
  );
  return `Grid:\n${rows.join('\n')}\nPlan ${horizon}:\n`;
}
