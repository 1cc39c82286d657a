/** What the policy reads: the grid with the agent (A) and the goal (G), then how many moves to plan. */
import type { Cell, GridLayout } from './layout';

export function gridObservation(layout: GridLayout, at: Cell, horizon: number): string {
  const rows = layout.cells.map((line, r) =>
    [...line].map((ch, c) => (r === at.row && c === at.col ? 'A' : r === layout.goal.row && c === layout.goal.col ? 'G' : ch)).join(''),
  );
  return `Grid:\n${rows.join('\n')}\nPlan ${horizon}:\n`;
}

/** The layout, the agent's cell and H back from an observation (the scripted oracle reads prompts). */
export function parseObservation(text: string): { layoutId: string; at: Cell; horizon: number } | null {
  const m = /^Grid:\n((?:[.#AG]+\n)+)Plan (\d+):\n$/.exec(text);
  if (!m) return null;
  const rows = m[1]!.trimEnd().split('\n');
  const row = rows.findIndex((r) => r.includes('A'));
  if (row < 0) return null;
  // The agent stands on a free cell; the layout's start is where the episode began, unknown here,
  // so the id puts the start at the agent (what a plan from this observation needs).
  return { layoutId: rows.join('/'), at: { row, col: rows[row]!.indexOf('A') }, horizon: Number(m[2]) };
}
