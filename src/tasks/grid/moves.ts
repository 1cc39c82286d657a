/**
 * Actions of the grid world, one character each. The project's tokenizer encodes each of them as
 * one token, and no run of them as fewer tokens (test/tasks/grid/tokens.test.ts), so move k of a plan
 * is token k of its generation: what lets a chunk's logprobs be a slice of the plan's.
 */
export const MOVES = ['U', 'D', 'L', 'R', 'X'] as const;
export type Move = (typeof MOVES)[number];

/** Row and column change of each move; X waits where it is. */
export const MOVE_DELTA: Record<Move, { row: number; col: number }> = {
  U: { row: -1, col: 0 },
  D: { row: 1, col: 0 },
  L: { row: 0, col: -1 },
  R: { row: 0, col: 1 },
  X: { row: 0, col: 0 },
};

export function isMove(ch: string): ch is Move {
  return (MOVES as readonly string[]).includes(ch);
}
