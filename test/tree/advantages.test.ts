import { addBranch, buildForest, nodeValues, scoreLeaf, treeAdvantages, type Forest } from '../../src/tree';
import { expectTreeError, step } from './helpers';

/**
 * r0 ─ r0.1 (tool call) ─┬ r0.1.1  reward 1
 *    │                   ├ r0.1.2  reward 1
 *    │                   └ r0.1.3  reward 0
 *    └ r0.2               reward 0
 *
 * r1 ─ r1.1 (tool call) ─┬ r1.1.1 (tool call) ─┬ r1.1.1.1  reward 1
 *    │                   │                     └ r1.1.1.2  reward 0
 *    │                   └ r1.1.2               reward 0
 *    ├ r1.2                                     reward 1
 *    ├ r1.3  pending (no value: left out)
 *    └ r1.4  leaf, not scored (left out)
 */
function handForest(): Forest {
  let f = buildForest(2, [2, 4]);
  f = step(f, 'r0.1', 'tool-call');
  f = addBranch(addBranch(f, 'r0.1').forest, 'r0.1').forest;
  for (const id of ['r0.1.1', 'r0.1.2', 'r0.1.3', 'r0.2']) f = step(f, id, 'eos');
  f = step(f, 'r1.1', 'tool-call');
  f = step(f, 'r1.1.1', 'tool-call');
  f = addBranch(f, 'r1.1.1').forest;
  f = addBranch(f, 'r1.1').forest;
  for (const id of ['r1.1.1.1', 'r1.1.1.2', 'r1.1.2', 'r1.2', 'r1.4']) f = step(f, id, 'eos');
  const rewards: Record<string, number> = { 'r0.1.1': 1, 'r0.1.2': 1, 'r0.1.3': 0, 'r0.2': 0, 'r1.1.1.1': 1, 'r1.1.1.2': 0, 'r1.1.2': 0, 'r1.2': 1 };
  for (const [id, r] of Object.entries(rewards)) f = scoreLeaf(f, id, r);
  return f;
}

function expectClose(actual: Record<string, number>, expected: Record<string, number>): void {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  for (const [id, v] of Object.entries(expected)) {
    if (Math.abs(actual[id]! - v) > 1e-12) expect({ id, value: actual[id] }).toEqual({ id, value: v });
  }
}

describe('nodeValues', () => {
  it('is the mean reward of the scored leaves below, with their count', () => {
    expect(nodeValues(handForest(), 0)).toEqual({
      r0: { value: 0.5, leaves: 4 },
      'r0.1': { value: 2 / 3, leaves: 3 },
      'r0.1.1': { value: 1, leaves: 1 },
      'r0.1.2': { value: 1, leaves: 1 },
      'r0.1.3': { value: 0, leaves: 1 },
      'r0.2': { value: 0, leaves: 1 },
    });
    const v1 = nodeValues(handForest(), 1);
    expect(Object.keys(v1)).toEqual(['r1', 'r1.1', 'r1.1.1', 'r1.1.1.1', 'r1.1.1.2', 'r1.1.2', 'r1.2']);
    expect(v1['r1']).toEqual({ value: 0.5, leaves: 4 });
    expect(v1['r1.1']).toEqual({ value: 1 / 3, leaves: 3 });
    expect(v1['r1.1.1']).toEqual({ value: 0.5, leaves: 2 });
  });
});

describe('treeAdvantages', () => {
  it('is global + local without reweighting', () => {
    expectClose(treeAdvantages(handForest(), 0, { reweight: 'none' }), {
      'r0.1': 2 * (2 / 3 - 1 / 2), // 1/3
      'r0.2': 2 * (0 - 1 / 2), // -1
      'r0.1.1': 1 - 1 / 2 + (1 - 2 / 3), // 5/6
      'r0.1.2': 5 / 6,
      'r0.1.3': 0 - 1 / 2 + (0 - 2 / 3), // -7/6
    });
    expectClose(treeAdvantages(handForest(), 1, { reweight: 'none' }), {
      'r1.1': -1 / 3,
      'r1.1.1': 0 + (1 / 2 - 1 / 3), // 1/6
      'r1.1.1.1': 1,
      'r1.1.1.2': -1,
      'r1.1.2': -1 / 2 - 1 / 3, // -5/6
      'r1.2': 1,
    });
  });

  it('divides by sqrt(scored leaves below) with TreeRL reweighting', () => {
    expectClose(treeAdvantages(handForest(), 0, { reweight: 'sqrt' }), {
      'r0.1': 1 / 3 / Math.sqrt(3),
      'r0.2': -1,
      'r0.1.1': 5 / 6,
      'r0.1.2': 5 / 6,
      'r0.1.3': -7 / 6,
    });
    expectClose(treeAdvantages(handForest(), 1, { reweight: 'sqrt' }), {
      'r1.1': -1 / 3 / Math.sqrt(3),
      'r1.1.1': 1 / 6 / Math.SQRT2,
      'r1.1.1.1': 1,
      'r1.1.1.2': -1,
      'r1.1.2': -5 / 6,
      'r1.2': 1,
    });
  });

  it('is zero everywhere when every leaf has the same reward', () => {
    let f = buildForest(1, 2);
    f = step(f, 'r0.1', 'tool-call');
    f = step(step(f, 'r0.1.1', 'eos'), 'r0.2', 'eos');
    f = scoreLeaf(scoreLeaf(f, 'r0.1.1', 1), 'r0.2', 1);
    expect(treeAdvantages(f, 0, { reweight: 'sqrt' })).toEqual({ 'r0.1': 0, 'r0.1.1': 0, 'r0.2': 0 });
  });

  it('refuses a tree without a scored leaf, and an unknown reweighting', () => {
    const f = step(buildForest(1, 1), 'r0.1', 'eos');
    expectTreeError(() => treeAdvantages(f, 0, { reweight: 'sqrt' }), 'no-scored-leaves', 'r0');
    expectTreeError(() => treeAdvantages(handForest(), 0, { reweight: 'log' as never }), 'bad-argument');
  });
});
