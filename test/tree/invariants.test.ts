import { buildForest, checkInvariants, scoreLeaf, type Forest, type InvariantRule, type TreeNode } from '../../src/tree';
import { clone, expectInvariantError, step } from './helpers';

/**
 * r0: r0.1 tool-call → { r0.1.1 eos (reward 1), r0.1.2 pending };  r0.2 eos
 * r1: r1.1 pending
 */
function base(): Forest {
  let f = buildForest(2, [2, 1]);
  f = step(f, 'r0.1', 'tool-call');
  f = step(f, 'r0.1.1', 'eos');
  f = step(f, 'r0.2', 'eos');
  f = { ...f, nodes: { ...f.nodes } };
  f.nodes['r0.1'] = { ...f.nodes['r0.1']!, children: [...f.nodes['r0.1']!.children, 'r0.1.2'] };
  f.nodes['r0.1.2'] = { id: 'r0.1.2', root: 0, parent: 'r0.1', depth: 2, status: 'pending', children: [], generatedTokens: 0, envTokens: 0, toolCalls: 1, entropy: 0 };
  return scoreLeaf(f, 'r0.1.1', 1);
}

const pendingUnder = (parent: TreeNode): TreeNode => ({
  id: `${parent.id}.1`, root: parent.root, parent: parent.id, depth: parent.depth + 1, status: 'pending', children: [], generatedTokens: 0, envTokens: 0, toolCalls: parent.toolCalls, entropy: 0,
});

/** [what, corruption, node reported, rule]: one corruption per rule, applied to a fresh copy of base(). */
const CORRUPTIONS: Array<[string, (f: Forest) => void, string, InvariantRule]> = [
  ['roots not an array', (f) => ((f as { roots: unknown }).roots = 'r0'), '(forest)', 'shape'],
  ['a node stored under another id', (f) => (f.nodes['r0.2']!.id = 'r0.9'), 'r0.2', 'key-matches-id'],
  ['a listed root missing', (f) => f.roots.push('r2'), 'r2', 'root-listed'],
  ['a root listed twice', (f) => (f.roots[1] = 'r0'), 'r0', 'root-listed'],
  ['a root at depth 1', (f) => (f.nodes['r0']!.depth = 1), 'r0', 'root-shape'],
  ['a root with a parent', (f) => (f.nodes['r1']!.parent = 'r0'), 'r1', 'root-shape'],
  ['a root that is a leaf', (f) => (f.nodes['r1']!.status = 'leaf'), 'r1', 'root-shape'],
  ['a root with another index', (f) => (f.nodes['r1']!.root = 0), 'r1', 'root-index'],
  ['a node with its parent tree index wrong', (f) => (f.nodes['r0.1.1']!.root = 1), 'r0.1.1', 'root-index'],
  ['a child id that does not match its position', (f) => renameLeaf(f, 'r0.2', 'r0.5'), 'r0.5', 'id-matches-position'],
  ['a parent that does not exist', (f) => (f.nodes['r0.2']!.parent = 'r0.9'), 'r0.2', 'parent-exists'],
  ['a parent that does not list its child', (f) => f.nodes['r0']!.children.pop(), 'r0.2', 'parent-lists-child'],
  ['a child listed twice', (f) => f.nodes['r0']!.children.push('r0.2'), 'r0.2', 'child-listed-once'],
  ['a listed child that does not exist', (f) => f.nodes['r0.1']!.children.push('r0.1.3'), 'r0.1', 'child-exists'],
  ['a listed child with another parent', (f) => f.nodes['r1']!.children.push('r0.2'), 'r1', 'child-points-back'],
  ['a depth off by one', (f) => (f.nodes['r0.1.1']!.depth = 3), 'r0.1.1', 'depth'],
  ['a node that is its own child', (f) => f.nodes['r0.1']!.children.push('r0.1'), 'r0.1', 'no-cycle'],
  ['a node that is its own ancestor', (f) => {
    f.nodes['r0.1']!.parent = 'r0.1.1';
    f.nodes['r0.1.1']!.children.push('r0.1');
  }, 'r0.1', 'no-cycle'],
  ['an orphan not listed as a root', (f) => (f.nodes['r7'] = { ...f.nodes['r1']!, id: 'r7', children: [] }), 'r7', 'reachable'],
  ['an unknown status', (f) => ((f.nodes['r0.2'] as { status: string }).status = 'done'), 'r0.2', 'status'],
  ['an unknown end', (f) => ((f.nodes['r0.2'] as { end: string }).end = 'stop'), 'r0.2', 'status'],
  ['an open segment that did not end in a tool call', (f) => (f.nodes['r0.1']!.end = 'eos'), 'r0.1', 'end-matches-status'],
  ['a leaf that ended in a tool call', (f) => (f.nodes['r0.2']!.end = 'tool-call'), 'r0.2', 'end-matches-status'],
  ['a leaf that was cut at tree.segmentTokens', (f) => (f.nodes['r0.2']!.end = 'segment-length'), 'r0.2', 'end-matches-status'],
  ['a cut segment that counts a tool call', (f) => (f.nodes['r0.1']!.end = 'segment-length'), 'r0.1', 'tool-calls'],
  ['a pending node with an end', (f) => (f.nodes['r0.1.2']!.end = 'length'), 'r0.1.2', 'end-matches-status'],
  ['a leaf with a child', (f) => addChild(f, 'r0.2'), 'r0.2', 'leaf-no-children'],
  ['a pending node with a child', (f) => addChild(f, 'r0.1.2'), 'r0.1.2', 'pending-no-children'],
  ['a tool-call count that skips a call', (f) => (f.nodes['r0.1.1']!.toolCalls = 0), 'r0.1.1', 'tool-calls'],
  ['a pending node with a call of its own', (f) => (f.nodes['r0.1.2']!.toolCalls = 2), 'r0.1.2', 'tool-calls'],
  ['a negative token count', (f) => (f.nodes['r0.2']!.generatedTokens = -3), 'r0.2', 'counts'],
  ['an entropy above 1', (f) => (f.nodes['r0.2']!.entropy = 1.5), 'r0.2', 'counts'],
  ['a reward on an open node', (f) => (f.nodes['r0.1']!.reward = 1), 'r0.1', 'reward-on-leaf'],
  ['a reward on a pending node', (f) => (f.nodes['r1.1']!.reward = 0), 'r1.1', 'reward-on-leaf'],
];

function renameLeaf(f: Forest, from: string, to: string): void {
  const node = f.nodes[from]!;
  delete f.nodes[from];
  f.nodes[to] = { ...node, id: to };
  const siblings = f.nodes[node.parent!]!.children;
  siblings[siblings.indexOf(from)] = to;
}

function addChild(f: Forest, parentId: string): void {
  const child = pendingUnder(f.nodes[parentId]!);
  f.nodes[child.id] = child;
  f.nodes[parentId]!.children.push(child.id);
}

describe('checkInvariants', () => {
  it('accepts the base forest and a fresh one', () => {
    checkInvariants(base());
    checkInvariants(buildForest(3, 2));
    checkInvariants({ nodes: {}, roots: [] });
  });

  it.each(CORRUPTIONS)('catches %s', (_what, corrupt, nodeId, rule) => {
    const forest = clone(base());
    corrupt(forest);
    expectInvariantError(() => checkInvariants(forest), nodeId, rule);
  });

  it('has a corruption for every rule', () => {
    const rules: InvariantRule[] = [
      'shape', 'key-matches-id', 'root-listed', 'root-shape', 'root-index', 'id-matches-position', 'parent-exists', 'parent-lists-child',
      'child-listed-once', 'child-exists', 'child-points-back', 'depth', 'no-cycle', 'reachable', 'status', 'end-matches-status',
      'leaf-no-children', 'pending-no-children', 'tool-calls', 'counts', 'reward-on-leaf',
    ];
    expect(new Set(CORRUPTIONS.map((c) => c[3]))).toEqual(new Set(rules));
  });

  it('names the node and the rule in its message', () => {
    const forest = clone(base());
    forest.nodes['r0.1.1']!.depth = 5;
    expect(() => checkInvariants(forest)).toThrow('tree invariant depth broken at r0.1.1: depth 5, parent r0.1 has depth 1');
  });
});
