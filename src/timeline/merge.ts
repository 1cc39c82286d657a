/**
 * Timeline merging with a trie (AgentJet's rule, docs/timelines.md).
 *
 * The rule: timeline i is absorbed into timeline j (i != j) when both have the same agent (and,
 * unless ignoreTools, the same tools list), |i| <= |j|, and message k of i equals message k of j
 * for every k < |i| under the compare key (compare.ts). Of identical timelines the highest input
 * index survives. Survivors (absorbed into no other) are returned, in input order, as copies in
 * which each non-llm message k takes author llm and the token ids and logprobs of message k of an
 * absorbed prefix where that message is llm; of several such prefixes the newest capture (highest
 * index) wins, the same rule drift repair uses (drift.ts) and AgentJet's merge follows (a survivor
 * is never a source, so sources are always the input as given). That is how
 * the model's sampled ids and logprobs reach training even though the longer request only carried
 * the reply back as env text. merge-pairwise.ts is the same rule written directly.
 *
 * How: one trie per group (agent, or agent and tools), one edge per message keyed by its compare
 * key; a timeline ends at the node its last message leads to. Then:
 * - a timeline ending at a node with children is a prefix of every timeline below it: absorbed;
 *   of the timelines ending at a leaf, the highest index survives and the rest are absorbed;
 * - one depth-first walk per trie keeps, for each message position k, the highest-index absorbed
 *   timeline on the current root path whose message k is llm (best[k]), with an undo log to
 *   restore it on the way back up. Each absorbed timeline is read once, when the walk enters its
 *   node; each survivor reads best[0..|s|) once, while it is copied. No survivor rescans the
 *   prefixes above it, which matters when many branches share a long chain of absorbed requests;
 * - each node holding absorbed timelines links to the nearest such node above it; going over the
 *   survivors in input order and following the links fills every `into` list already sorted.
 *
 * Complexity: O(K + M + C + A) time and O(K + M) memory, where K is the size of the input's
 * compare keys (text characters, or token ids, hashed once each), M the number of input messages,
 * C the size of the survivors' copies (the output) and A the total length of the `into` lists (also
 * output). In the chain case (each request extends the previous one) every request is read once
 * and only the last is copied; the pairwise rule is O(n²·L) there. The walk follows
 * child/sibling/parent links instead of recursing, so a trie as deep as the longest timeline cannot
 * overflow the stack.
 */
import { copyMessage, messageKey } from './compare';
import { detectSnaps } from './snap';
import { mergeStats } from './stats';
import { DEFAULT_MERGE_OPTIONS, type MergeOptions, type MergeResult, type Timeline, type TimelineMessage } from './types';
import { validateTimelines } from './validate';

/**
 * Children are a linked list (first child, next sibling), so the walk needs no iterator or array;
 * a Map to find them by key is made only once a node has a second child (chains have one).
 */
interface TrieNode {
  /** Compare key of the message leading here from the parent. */
  key: string;
  parent: TrieNode | undefined;
  firstChild: TrieNode | undefined;
  nextSibling: TrieNode | undefined;
  byKey: Map<string, TrieNode> | undefined;
  /** Input indices of the timelines ending here, ascending (inserted in input order). */
  ends: number[] | undefined;
  /** Set on nodes holding absorbed timelines: the survivors they are prefixes of, ascending. */
  into: number[] | undefined;
  /** Nearest strict ancestor holding absorbed timelines. */
  absorbedAbove: TrieNode | undefined;
  /** Undo-log length when the walk entered this node. */
  mark: number;
}

function newNode(key: string, parent: TrieNode | undefined): TrieNode {
  return { key, parent, firstChild: undefined, nextSibling: undefined, byKey: undefined, ends: undefined, into: undefined, absorbedAbove: undefined, mark: 0 };
}

function childFor(node: TrieNode, key: string): TrieNode {
  const only = node.firstChild;
  if (only === undefined) return (node.firstChild = newNode(key, node));
  if (node.byKey === undefined) {
    if (only.key === key) return only;
    node.byKey = new Map([[only.key, only]]);
  } else {
    const found = node.byKey.get(key);
    if (found !== undefined) return found;
  }
  const child = newNode(key, node);
  child.nextSibling = node.firstChild;
  node.firstChild = child;
  node.byKey.set(key, child);
  return child;
}

export function mergeTimelines(timelines: readonly Timeline[], options: MergeOptions = DEFAULT_MERGE_OPTIONS): MergeResult {
  validateTimelines(timelines);
  const n = timelines.length;
  const { roots, endNode, maxLength } = buildTries(timelines, options);

  const copies: Array<Timeline | undefined> = new Array<Timeline | undefined>(n).fill(undefined);
  // best[k]: highest-index absorbed timeline on the current root path whose message k is llm (-1: none).
  const best: number[] = new Array<number>(maxLength).fill(-1);
  const undoPosition: number[] = [];
  const undoValue: number[] = [];

  const enter = (node: TrieNode): void => {
    node.mark = undoPosition.length;
    const parent = node.parent;
    node.absorbedAbove = parent === undefined ? undefined : parent.into !== undefined ? parent : parent.absorbedAbove;
    const ends = node.ends;
    if (ends === undefined) return;
    const leaf = node.firstChild === undefined;
    const absorbedCount = leaf ? ends.length - 1 : ends.length;
    if (absorbedCount > 0) node.into = [];
    for (let e = 0; e < absorbedCount; e++) {
      const i = ends[e]!;
      const messages = timelines[i]!.messages;
      for (let k = 0; k < messages.length; k++) {
        if (messages[k]!.author !== 'llm') continue;
        const current = best[k]!;
        if (current > i) continue;
        undoPosition.push(k);
        undoValue.push(current);
        best[k] = i;
      }
    }
    if (leaf) {
      const s = ends[ends.length - 1]!;
      copies[s] = survivorCopy(timelines, s, best);
    }
  };
  const leave = (node: TrieNode): void => {
    while (undoPosition.length > node.mark) best[undoPosition.pop()!] = undoValue.pop()!;
  };

  // Depth-first over each trie along the child/sibling links: no recursion, no stack.
  for (const root of roots) {
    let node = root;
    enter(node);
    for (;;) {
      const child = node.firstChild;
      if (child !== undefined) {
        enter(child);
        node = child;
        continue;
      }
      // node's subtree is done: leave nodes until one has a next sibling.
      let next: TrieNode | undefined;
      for (;;) {
        leave(node);
        if (node === root) break;
        next = node.nextSibling;
        if (next !== undefined) break;
        node = node.parent!;
      }
      if (next === undefined) break;
      enter(next);
      node = next;
    }
  }

  // Survivors in input order, so each into list comes out sorted.
  const survivors: Timeline[] = [];
  for (let s = 0; s < n; s++) {
    const copy = copies[s];
    if (copy === undefined) continue;
    survivors.push(copy);
    const end = endNode[s]!;
    for (let node = end.into !== undefined ? end : end.absorbedAbove; node !== undefined; node = node.absorbedAbove) node.into!.push(s);
  }
  const absorbed: MergeResult['absorbed'] = [];
  for (let i = 0; i < n; i++) {
    if (copies[i] !== undefined) continue;
    absorbed.push({ id: timelines[i]!.id, into: endNode[i]!.into!.map((s) => timelines[s]!.id) });
  }

  return {
    timelines: survivors,
    absorbed,
    snaps: options.snapDetection ? detectSnaps(survivors, options) : [],
    stats: mergeStats(timelines, survivors),
  };
}

function buildTries(timelines: readonly Timeline[], options: MergeOptions): { roots: TrieNode[]; endNode: TrieNode[]; maxLength: number } {
  // agent -> tools ('' throughout when tools are ignored) -> root
  const byAgent = new Map<string, Map<string, TrieNode>>();
  const roots: TrieNode[] = [];
  const endNode: TrieNode[] = [];
  let maxLength = 0;
  for (let i = 0; i < timelines.length; i++) {
    const t = timelines[i]!;
    let byTools = byAgent.get(t.agent);
    if (byTools === undefined) byAgent.set(t.agent, (byTools = new Map()));
    const toolsKey = options.ignoreTools ? '' : t.tools;
    let node = byTools.get(toolsKey);
    if (node === undefined) {
      byTools.set(toolsKey, (node = newNode('', undefined)));
      roots.push(node);
    }
    const messages = t.messages;
    for (let k = 0; k < messages.length; k++) node = childFor(node, messageKey(messages[k]!, options.compareBy));
    (node.ends ??= []).push(i);
    endNode.push(node);
    maxLength = Math.max(maxLength, messages.length);
  }
  return { roots, endNode, maxLength };
}

/** Survivor s with best[k]'s llm author, ids and logprobs on each of its non-llm messages. */
function survivorCopy(timelines: readonly Timeline[], s: number, best: readonly number[]): Timeline {
  const t = timelines[s]!;
  const messages: TimelineMessage[] = [];
  for (let k = 0; k < t.messages.length; k++) {
    const m = t.messages[k]!;
    const source = best[k]!;
    if (source < 0 || m.author === 'llm') {
      messages.push(copyMessage(m));
    } else {
      const from = timelines[source]!.messages[k]!;
      messages.push({ author: 'llm', text: m.text, tokenIds: from.tokenIds.slice(), logprobs: from.logprobs.slice() });
    }
  }
  return { id: t.id, agent: t.agent, tools: t.tools, messages };
}
