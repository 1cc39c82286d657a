/**
 * Structural check of a whole forest. The tree functions keep these rules by construction; this
 * exists for what they cannot see: a forest carried through continue-as-new or a query, edited by
 * hand in a test, or a node mutated in place by a driver. It throws at the first broken rule,
 * naming the node and the rule (TreeInvariantError), never returns a partial verdict.
 *
 * Order matters only for which of several broken rules is reported: whole-forest shape, then
 * roots, then cycles (so a cycle is not misreported as a depth error), then every node against
 * its parent, then every node against its children, then reachability.
 * Cost: O(nodes × depth) for the cycle walk, O(nodes + edges) for the rest.
 */
import { TreeInvariantError, type InvariantRule } from './errors';
import { childId, rootId } from './ids';
import { keepsOpen, SEGMENT_ENDS, type Forest, type TreeNode } from './types';

const STATUSES: readonly string[] = ['pending', 'open', 'leaf'];

function fail(nodeId: string, rule: InvariantRule, problem: string): never {
  throw new TreeInvariantError(nodeId, rule, problem);
}

const isCount = (x: unknown): boolean => Number.isInteger(x) && (x as number) >= 0;

export function checkInvariants(forest: Forest): void {
  if (forest === null || typeof forest !== 'object' || forest.nodes === null || typeof forest.nodes !== 'object' || Array.isArray(forest.nodes)) {
    fail('(forest)', 'shape', 'forest.nodes must be a record of nodes');
  }
  if (!Array.isArray(forest.roots)) fail('(forest)', 'shape', 'forest.roots must be an array of ids');
  const nodes = forest.nodes;
  const entries = Object.entries(nodes);
  const has = (id: string): boolean => Object.hasOwn(nodes, id);

  for (const [key, node] of entries) {
    if (node === null || typeof node !== 'object' || node.id !== key) fail(key, 'key-matches-id', `stored under ${JSON.stringify(key)} but its id is ${JSON.stringify(node?.id)}`);
    if (!Array.isArray(node.children)) fail(key, 'shape', 'children must be an array of ids');
  }

  const rootIndex = new Map<string, number>();
  forest.roots.forEach((id, r) => {
    if (!has(id)) fail(id, 'root-listed', `roots[${r}] names a node the forest lacks`);
    if (rootIndex.has(id)) fail(id, 'root-listed', `listed twice in roots (at ${rootIndex.get(id)} and ${r})`);
    rootIndex.set(id, r);
    const node = nodes[id]!;
    if (node.parent !== null) fail(id, 'root-shape', `a root has no parent, this one has ${JSON.stringify(node.parent)}`);
    if (node.depth !== 0) fail(id, 'root-shape', `a root has depth 0, this one ${node.depth}`);
    if (node.status !== 'open') fail(id, 'root-shape', `a root is always open, this one is ${node.status}`);
    if (node.end !== undefined || node.toolCalls !== 0 || node.generatedTokens !== 0) {
      fail(id, 'root-shape', 'a root (the prompt) generates nothing: no end, no tool calls, no generated tokens');
    }
    if (node.root !== r) fail(id, 'root-index', `roots[${r}] says root index ${node.root}`);
    if (id !== rootId(r)) fail(id, 'id-matches-position', `roots[${r}] should be ${rootId(r)}`);
  });

  // Cycles first: along a parent cycle every other rule (depth, above all) breaks too, misleadingly.
  for (const [id, node] of entries) {
    if (node.children.includes(id)) fail(id, 'no-cycle', 'lists itself as its own child');
    const seen = new Set<string>([id]);
    for (let up = node.parent; up !== null && has(up); up = nodes[up]!.parent) {
      if (seen.has(up)) fail(id, 'no-cycle', `its parent chain loops at ${up}: a node is its own ancestor`);
      seen.add(up);
    }
  }

  for (const [id, node] of entries) checkAgainstParent(forest, id, node, rootIndex);
  for (const [id, node] of entries) checkAgainstChildren(forest, id, node);

  const reached = new Set<string>();
  const stack = [...forest.roots];
  while (stack.length > 0) {
    const id = stack.pop()!;
    if (reached.has(id)) continue;
    reached.add(id);
    stack.push(...nodes[id]!.children);
  }
  for (const [id] of entries) if (!reached.has(id)) fail(id, 'reachable', 'not reachable from any root');
}

/** Rules between a node and its parent, and the node's own fields. */
function checkAgainstParent(forest: Forest, id: string, node: TreeNode, rootIndex: ReadonlyMap<string, number>): void {
  if (!STATUSES.includes(node.status)) fail(id, 'status', `unknown status ${JSON.stringify(node.status)}`);
  if (node.end !== undefined && !SEGMENT_ENDS.includes(node.end)) fail(id, 'status', `unknown end ${JSON.stringify(node.end)}`);
  if (!Number.isInteger(node.depth) || node.depth < 0) fail(id, 'counts', `depth must be an integer >= 0, got ${node.depth}`);
  for (const field of ['generatedTokens', 'envTokens', 'toolCalls'] as const) {
    if (!isCount(node[field])) fail(id, 'counts', `${field} must be an integer >= 0, got ${node[field]}`);
  }
  if (!Number.isFinite(node.entropy) || node.entropy < 0 || node.entropy > 1 + 1e-9) fail(id, 'counts', `entropy must be in [0, 1], got ${node.entropy}`);
  if (node.reward !== undefined) {
    if (node.status !== 'leaf') fail(id, 'reward-on-leaf', `a ${node.status} node has reward ${node.reward}`);
    if (!Number.isFinite(node.reward)) fail(id, 'counts', `reward must be finite, got ${node.reward}`);
  }
  if (node.parent === null) {
    if (!rootIndex.has(id)) fail(id, 'reachable', 'has no parent but is not one of forest.roots');
    return;
  }
  if (!Object.hasOwn(forest.nodes, node.parent)) fail(id, 'parent-exists', `parent ${node.parent} is not in the forest`);
  const parent = forest.nodes[node.parent]!;
  const listed = parent.children.filter((c) => c === id).length;
  if (listed === 0) fail(id, 'parent-lists-child', `parent ${parent.id} does not list it among its children`);
  if (listed > 1) fail(id, 'child-listed-once', `parent ${parent.id} lists it ${listed} times`);
  if (node.depth !== parent.depth + 1) fail(id, 'depth', `depth ${node.depth}, parent ${parent.id} has depth ${parent.depth}`);
  if (node.root !== parent.root) fail(id, 'root-index', `root index ${node.root}, parent ${parent.id} has ${parent.root}`);
  const expected = childId(parent.id, parent.children.indexOf(id) + 1);
  if (id !== expected) fail(id, 'id-matches-position', `as child ${parent.children.indexOf(id) + 1} of ${parent.id} its id should be ${expected}`);
  if (node.status === 'pending' && node.end !== undefined) fail(id, 'end-matches-status', `pending but has end ${node.end}`);
  if (node.status === 'open' && !keepsOpen(node.end)) fail(id, 'end-matches-status', `an open segment ends in a tool call or at tree.segmentTokens, this one in ${String(node.end)}`);
  if (node.status === 'leaf' && (node.end === undefined || keepsOpen(node.end))) fail(id, 'end-matches-status', `a leaf needs a finishing end, got ${String(node.end)}`);
  const toolCalls = parent.toolCalls + (node.end === 'tool-call' ? 1 : 0);
  if (node.toolCalls !== toolCalls) fail(id, 'tool-calls', `toolCalls ${node.toolCalls}, expected ${toolCalls} (parent ${parent.id} has ${parent.toolCalls}, end ${String(node.end)})`);
}

/** Rules between a node and the children it lists. */
function checkAgainstChildren(forest: Forest, id: string, node: TreeNode): void {
  for (const c of node.children) {
    if (!Object.hasOwn(forest.nodes, c)) fail(id, 'child-exists', `lists child ${c}, which is not in the forest`);
    if (forest.nodes[c]!.parent !== id) fail(id, 'child-points-back', `lists child ${c}, whose parent is ${String(forest.nodes[c]!.parent)}`);
  }
  if (node.children.length > 0 && node.status === 'leaf') fail(id, 'leaf-no-children', `a leaf with children ${node.children.join(', ')}`);
  if (node.children.length > 0 && node.status === 'pending') fail(id, 'pending-no-children', `a pending node with children ${node.children.join(', ')}`);
}
