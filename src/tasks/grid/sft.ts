/**
 * SFT demonstrations for the grid world: the oracle's plans, with the policy's own protocol. For
 * each training layout and each horizon H of the pattern, the oracle plays the episode (a plan of H
 * moves, executed until the goal or the end of the plan, then a new plan from where it stands), and
 * every plan it writes is one example; one more example per layout and H starts from a random free
 * cell, so the policy has seen plans from off the shortest path (where RL's exploration leads).
 */
import { closeTurn } from '../../planact/protocol';
import { fnv1a32, mulberry32, randInt } from '../../domain/rng';
import { executeChunk } from './env';
import { gridObservation } from './formats';
import type { Cell, GridLayout } from './layout';
import { oraclePlan, shortestPath } from './oracle';

export interface GridSftExample {
  layoutId: string;
  horizon: number;
  segments: Array<{ text: string; train: boolean }>;
}

export function gridSftExamples(layout: GridLayout, horizons: readonly number[]): GridSftExample[] {
  const out: GridSftExample[] = [];
  const rng = mulberry32(fnv1a32(`grid-sft:${layout.id}`));
  const free: Cell[] = [];
  layout.cells.forEach((line, row) => [...line].forEach((ch, col) => ch === '.' && free.push({ row, col })));
  const example = (at: Cell, horizon: number) => {
    const plan = oraclePlan(layout, at, horizon);
    out.push({
      layoutId: layout.id,
      horizon,
      segments: [
        { text: gridObservation(layout, at, horizon), train: false },
        { text: closeTurn(plan.join('')), train: true },
      ],
    });
    return plan;
  };
  for (const horizon of [...new Set(horizons)]) {
    let at = layout.start;
    for (let plans = 0; plans < layout.distance; plans++) {
      const outcome = executeChunk(layout, at, example(at, horizon));
      if (outcome.reachedGoal) break;
      at = outcome.position;
    }
    // A cell walled off from the goal has no oracle plan.
    const other = free.filter((c) => (c.row !== layout.goal.row || c.col !== layout.goal.col) && shortestPath(layout, c, layout.goal) !== null);
    example(other[randInt(rng, 0, other.length - 1)]!, horizon);
  }
  return out;
}
