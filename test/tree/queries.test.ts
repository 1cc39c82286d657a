import { buildForest, expandable, leaves, pathTo, pendingNodes, treeNodeIds, type Forest } from '../../src/tree';
import { expectInvariantError, expectTreeError, step } from './helpers';

/**
 * r0: r0.1 tool-call → r0.1.1 eos;  r0.2 eos;  r0.3 tool-call → r0.3.1 pending
 * r1: r1.1 pending
 */
function sample(): Forest {
  let f = buildForest(2, [3, 1]);
  f = step(f, 'r0.1', 'tool-call');
  f = step(f, 'r0.1.1', 'eos');
  f = step(f, 'r0.2', 'eos');
  f = step(f, 'r0.3', 'tool-call');
  return f;
}

describe('queries', () => {
  it('walk trees in preorder, children in creation order', () => {
    expect(treeNodeIds(sample(), 0)).toEqual(['r0', 'r0.1', 'r0.1.1', 'r0.2', 'r0.3', 'r0.3.1']);
    expect(treeNodeIds(sample(), 1)).toEqual(['r1', 'r1.1']);
  });

  it('list pending nodes over all trees, open nodes (root included) and leaves per tree', () => {
    const f = sample();
    expect(pendingNodes(f)).toEqual(['r0.3.1', 'r1.1']);
    expect(expandable(f, 0)).toEqual(['r0', 'r0.1', 'r0.3']);
    expect(expandable(f, 1)).toEqual(['r1']);
    expect(leaves(f, 0)).toEqual(['r0.1.1', 'r0.2']);
    expect(leaves(f, 1)).toEqual([]);
  });

  it('give the path from the root', () => {
    expect(pathTo(sample(), 'r0.3.1')).toEqual(['r0', 'r0.3', 'r0.3.1']);
    expectTreeError(() => pathTo(sample(), 'r9'), 'unknown-node', 'r9');
  });

  it('refuse a root index the forest lacks', () => {
    expectTreeError(() => leaves(sample(), 2), 'unknown-root');
    expectTreeError(() => expandable(sample(), -1), 'unknown-root');
    expectTreeError(() => expandable(sample(), 0.5), 'unknown-root');
  });
});

describe('pathTo on a corrupt forest', () => {
  it('fails on a parent cycle instead of looping', () => {
    const f = sample();
    f.nodes['r0.1'] = { ...f.nodes['r0.1']!, parent: 'r0.1.1' };
    expectInvariantError(() => pathTo(f, 'r0.1.1'), 'r0.1.1', 'no-cycle');
  });
});
