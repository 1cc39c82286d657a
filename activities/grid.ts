/**
 * The grid world's environment on the tools queue: a chunk of moves in, where the agent went out.
 * Layouts travel as their ids (a few dozen characters), so the history shows the grid.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { executeChunk, GridLayoutError, isFree, isMove, layoutFromId, type Cell, type ChunkOutcome } from '../src/tasks/grid';

export interface GridChunkInput {
  layoutId: string;
  from: Cell;
  moves: string;
}

export function createGridActivities() {
  return {
    async gridChunk(input: GridChunkInput): Promise<ChunkOutcome> {
      try {
        const layout = layoutFromId(input.layoutId);
        const moves = [...input.moves];
        const bad = moves.find((m) => !isMove(m));
        if (bad !== undefined) throw new GridLayoutError(`not a move: ${JSON.stringify(bad)}`);
        if (!isFree(layout, input.from)) throw new GridLayoutError(`${JSON.stringify(input.from)} is not a free cell of ${input.layoutId}`);
        return executeChunk(layout, input.from, moves.filter(isMove));
      } catch (err) {
        // Bad input fails the same on every retry.
        if (err instanceof GridLayoutError) throw ApplicationFailure.nonRetryable(err.message, 'GridInputError');
        throw err;
      }
    },
  };
}

export type GridActivities = ReturnType<typeof createGridActivities>;
