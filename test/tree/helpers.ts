/** Small builders for tree tests: outcomes with defaults, a typed-error matcher, scripted rngs. */
import type { Rng } from '../../src/domain/rng';
import { addBranch, completeSegment, keepsOpen, TreeError, TreeInvariantError, type Forest, type InvariantRule, type SegmentEnd, type SegmentOutcome, type TreeErrorCode } from '../../src/tree';

export function outcome(end: SegmentEnd, over: Partial<SegmentOutcome> = {}): SegmentOutcome {
  return { generatedTokens: 10, envTokens: end === 'tool-call' ? 4 : 0, entropy: 0.2, end, ...over };
}

/** Completes `id` and, when it stayed open (a tool call or a cut), adds its continuation: what the workflow does. */
export function step(forest: Forest, id: string, end: SegmentEnd, over: Partial<SegmentOutcome> = {}): Forest {
  const next = completeSegment(forest, id, outcome(end, over));
  return keepsOpen(end) ? addBranch(next, id).forest : next;
}

export function expectTreeError(fn: () => unknown, code: TreeErrorCode, nodeId?: string | null): TreeError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TreeError);
  const e = caught as TreeError;
  expect(e.code).toBe(code);
  if (nodeId !== undefined) expect(e.nodeId).toBe(nodeId);
  return e;
}

export function expectInvariantError(fn: () => unknown, nodeId: string, rule: InvariantRule): void {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(TreeInvariantError);
  expect({ nodeId: (caught as TreeInvariantError).nodeId, rule: (caught as TreeInvariantError).rule }).toEqual({ nodeId, rule });
}

/** An rng that returns the given values in turn, forever; counts its calls. */
export function scripted(values: readonly number[]): Rng & { calls: number } {
  let i = 0;
  const rng = (() => {
    rng.calls++;
    return values[i++ % values.length]!;
  }) as Rng & { calls: number };
  rng.calls = 0;
  return rng;
}

/** A deep copy, for corrupting by hand or checking an input was left alone. */
export const clone = (forest: Forest): Forest => JSON.parse(JSON.stringify(forest)) as Forest;
