import { addBranch, buildForest, checkInvariants, completeSegment, getNode, pathTo, scoreLeaf, type Forest } from '../../src/tree';
import { clone, expectTreeError, outcome, step } from './helpers';

describe('buildForest', () => {
  it('makes open roots r<i> with pending children r<i>.<k>', () => {
    const forest = buildForest(2, 3);
    expect(forest.roots).toEqual(['r0', 'r1']);
    expect(Object.keys(forest.nodes)).toEqual(['r0', 'r0.1', 'r0.2', 'r0.3', 'r1', 'r1.1', 'r1.2', 'r1.3']);
    expect(forest.nodes['r0']).toEqual({ id: 'r0', root: 0, parent: null, depth: 0, status: 'open', children: ['r0.1', 'r0.2', 'r0.3'], generatedTokens: 0, envTokens: 0, toolCalls: 0, entropy: 0 });
    expect(forest.nodes['r1.2']).toEqual({ id: 'r1.2', root: 1, parent: 'r1', depth: 1, status: 'pending', children: [], generatedTokens: 0, envTokens: 0, toolCalls: 0, entropy: 0 });
    checkInvariants(forest);
  });

  it('takes one initial count per root', () => {
    const forest = buildForest(3, [1, 3, 2]);
    expect(forest.roots.map((r) => forest.nodes[r]!.children.length)).toEqual([1, 3, 2]);
    checkInvariants(forest);
  });

  it('refuses bad counts with a typed error', () => {
    expectTreeError(() => buildForest(2, [1]), 'bad-argument');
    expectTreeError(() => buildForest(2, 0), 'bad-argument');
    expectTreeError(() => buildForest(-1, 1), 'bad-argument');
    expectTreeError(() => buildForest(1, 1.5), 'bad-argument');
    expect(buildForest(0, 2)).toEqual({ nodes: {}, roots: [] });
  });
});

describe('completeSegment and addBranch', () => {
  it('opens a node that ended in a tool call, closes one that finished', () => {
    let forest = buildForest(1, 2);
    forest = completeSegment(forest, 'r0.1', outcome('tool-call', { generatedTokens: 7, envTokens: 3, entropy: 0.4, segment: { sha256: 'ab', bytes: 12, kind: 'segment' } }));
    forest = completeSegment(forest, 'r0.2', outcome('length', { generatedTokens: 64 }));
    expect(forest.nodes['r0.1']).toMatchObject({ status: 'open', end: 'tool-call', toolCalls: 1, generatedTokens: 7, envTokens: 3, entropy: 0.4, segment: { sha256: 'ab', bytes: 12, kind: 'segment' } });
    expect(forest.nodes['r0.2']).toMatchObject({ status: 'leaf', end: 'length', toolCalls: 0, generatedTokens: 64 });
    expect(forest.nodes['r0.2']!.segment).toBeUndefined();
    checkInvariants(forest);
  });

  it.each(['eos', 'length', 'tool-limit', 'bad-tool-call'] as const)('makes a leaf of a segment that ended by %s', (end) => {
    const forest = completeSegment(buildForest(1, 1), 'r0.1', outcome(end));
    expect(forest.nodes['r0.1']!.status).toBe('leaf');
    expect(forest.nodes['r0.1']!.toolCalls).toBe(0);
  });

  it('counts tool calls along the path, root to node', () => {
    let forest = buildForest(1, 1);
    forest = step(forest, 'r0.1', 'tool-call');
    forest = step(forest, 'r0.1.1', 'tool-call');
    forest = step(forest, 'r0.1.1.1', 'tool-limit');
    const branch = addBranch(forest, 'r0.1');
    forest = step(branch.forest, branch.id, 'tool-call');
    expect(branch.id).toBe('r0.1.2');
    // A pending node carries the calls already on its path.
    expect(forest.nodes['r0.1.2.1']).toMatchObject({ status: 'pending', toolCalls: 2 });
    forest = step(forest, 'r0.1.2.1', 'eos');
    const calls = Object.fromEntries(Object.values(forest.nodes).map((n) => [n.id, n.toolCalls]));
    expect(calls).toEqual({ r0: 0, 'r0.1': 1, 'r0.1.1': 2, 'r0.1.1.1': 2, 'r0.1.2': 2, 'r0.1.2.1': 2 });
    expect(pathTo(forest, 'r0.1.2.1')).toEqual(['r0', 'r0.1', 'r0.1.2', 'r0.1.2.1']);
    expect(pathTo(forest, 'r0')).toEqual(['r0']);
    checkInvariants(forest);
  });

  it('numbers branches after the existing children', () => {
    let forest = buildForest(1, 2);
    const a = addBranch(forest, 'r0');
    const b = addBranch(a.forest, 'r0');
    forest = b.forest;
    expect([a.id, b.id]).toEqual(['r0.3', 'r0.4']);
    expect(forest.nodes['r0']!.children).toEqual(['r0.1', 'r0.2', 'r0.3', 'r0.4']);
    checkInvariants(forest);
  });

  it('leaves its input untouched and shares the nodes that did not change', () => {
    const before = step(buildForest(2, 2), 'r0.1', 'tool-call');
    const snapshot = clone(before);
    const completed = completeSegment(before, 'r0.2', outcome('eos'));
    const branched = addBranch(completed, 'r0.1');
    expect(before).toEqual(snapshot);
    expect(completed.nodes['r0.2']!.status).toBe('leaf');
    expect(branched.forest.nodes['r0.1']!.children).toEqual(['r0.1.1', 'r0.1.2']);
    expect(completed.nodes['r0.1']!.children).toEqual(['r0.1.1']);
    expect(branched.forest.nodes['r1']).toBe(before.nodes['r1']);
  });

  it('refuses to complete a node twice, the root, or an unknown id', () => {
    const forest = completeSegment(buildForest(1, 1), 'r0.1', outcome('eos'));
    expectTreeError(() => completeSegment(forest, 'r0.1', outcome('eos')), 'not-pending', 'r0.1');
    expectTreeError(() => completeSegment(forest, 'r0', outcome('eos')), 'not-pending', 'r0');
    expectTreeError(() => completeSegment(forest, 'r0.7', outcome('eos')), 'unknown-node', 'r0.7');
    expectTreeError(() => completeSegment(forest, 'constructor', outcome('eos')), 'unknown-node', 'constructor');
  });

  it('refuses to branch from a leaf or a pending node', () => {
    let forest = buildForest(1, 2);
    forest = completeSegment(forest, 'r0.1', outcome('eos'));
    expectTreeError(() => addBranch(forest, 'r0.1'), 'not-open', 'r0.1');
    expectTreeError(() => addBranch(forest, 'r0.2'), 'not-open', 'r0.2');
    expectTreeError(() => addBranch(forest, 'nope'), 'unknown-node', 'nope');
  });

  it('refuses out-of-range outcomes', () => {
    const forest = buildForest(1, 1);
    expectTreeError(() => completeSegment(forest, 'r0.1', outcome('eos', { entropy: 1.5 })), 'bad-argument', 'r0.1');
    expectTreeError(() => completeSegment(forest, 'r0.1', outcome('eos', { entropy: Number.NaN })), 'bad-argument');
    expectTreeError(() => completeSegment(forest, 'r0.1', outcome('eos', { generatedTokens: -1 })), 'bad-argument');
    expectTreeError(() => completeSegment(forest, 'r0.1', outcome('eos', { envTokens: 0.5 })), 'bad-argument');
    expectTreeError(() => completeSegment(forest, 'r0.1', { ...outcome('eos'), end: 'stop' as never }), 'bad-argument');
  });
});

describe('scoreLeaf', () => {
  let forest: Forest;
  beforeEach(() => {
    forest = step(step(buildForest(1, 2), 'r0.1', 'tool-call'), 'r0.2', 'eos');
  });

  it('records a leaf reward once', () => {
    const scored = scoreLeaf(forest, 'r0.2', 1);
    expect(getNode(scored, 'r0.2').reward).toBe(1);
    expect(getNode(forest, 'r0.2').reward).toBeUndefined();
    expectTreeError(() => scoreLeaf(scored, 'r0.2', 0), 'already-scored', 'r0.2');
  });

  it('scores leaves only, with finite rewards', () => {
    expectTreeError(() => scoreLeaf(forest, 'r0.1', 1), 'not-leaf', 'r0.1');
    expectTreeError(() => scoreLeaf(forest, 'r0.1.1', 1), 'not-leaf', 'r0.1.1');
    expectTreeError(() => scoreLeaf(forest, 'r0', 1), 'not-leaf', 'r0');
    expectTreeError(() => scoreLeaf(forest, 'r0.2', Number.POSITIVE_INFINITY), 'bad-argument', 'r0.2');
  });
});
