/**
 * Snap detection: a diagnostic for "why did my agent's requests not merge into one timeline?".
 *
 * Every survivor of a merge is a place where an agent's context forked (AgentJet calls it a snap):
 * a memory update rewrote history, a framework retried with a temporary error message, the chat
 * template dropped the model's thinking, a tool list changed. For each survivor this reports the
 * other survivor of the same agent sharing the longest message prefix with it (ties: the lowest
 * input index), where they part and why.
 *
 * Partners are searched among survivors only, and across tools lists: a non-survivor is a prefix of
 * some survivor, which shares at least as long a prefix, and a survivor's own absorbed prefixes do
 * not part from it at all. Because merging already absorbed every prefix, between two survivors:
 * - 'length' cannot arise (a survivor that is a prefix of another of its group would have been
 *   absorbed); it is kept for classifySnap on arbitrary pairs;
 * - 'tools' is the only reason when every compared message is equal (ignoreTools false);
 * - 'tokens' needs compareBy 'token': under 'text' two messages with equal text are the same trie
 *   edge whatever their ids, so drift never parts timelines (by design) and is not a snap;
 * - 'author' alone never parts timelines (authors are not compared). It is reported when the
 *   messages differ at the fork and one of them is the model's own output while the other holds
 *   env text in its place: the reply was not fed back as written (edited, re-rendered, replaced).
 *   With equal text and different ids that is drift, reported as 'tokens'.
 *
 * Authors are read from the merged survivors, after the llm copy.
 *
 * Cost: one trie per agent over the survivors' message keys, O(survivor size).
 */
import { messageKey, sharedPrefix } from './compare';
import type { MergeOptions, SnapReason, SnapReport, Timeline } from './types';

/** Why a and b part after sharing their first `shared` messages (see the module comment). */
export function classifySnap(a: Timeline, b: Timeline, shared: number, options: Pick<MergeOptions, 'ignoreTools'>): SnapReason {
  if (shared < a.messages.length && shared < b.messages.length) {
    const x = a.messages[shared]!;
    const y = b.messages[shared]!;
    if (x.text === y.text) return 'tokens';
    if ((x.author === 'llm') !== (y.author === 'llm')) return 'author';
    return 'text';
  }
  if (!options.ignoreTools && a.tools !== b.tools) return 'tools';
  return 'length';
}

interface SnapNode {
  children: Map<string, SnapNode>;
  /** Survivors whose path passes through (or ends at) this node. */
  count: number;
  /** The two lowest survivor positions through this node (inserted in ascending order). */
  first: number;
  second: number;
}

const newNode = (): SnapNode => ({ children: new Map(), count: 0, first: -1, second: -1 });

/** Snap reports for merged survivors (in input order), using a per-agent trie to find partners. */
export function detectSnaps(survivors: readonly Timeline[], options: Pick<MergeOptions, 'compareBy' | 'ignoreTools'>): SnapReport[] {
  const roots = new Map<string, SnapNode>();
  const keys: string[][] = [];
  survivors.forEach((t, s) => {
    let root = roots.get(t.agent);
    if (root === undefined) roots.set(t.agent, (root = newNode()));
    let node: SnapNode = root;
    const path = t.messages.map((m) => messageKey(m, options.compareBy));
    keys.push(path);
    const visit = (n: SnapNode) => {
      n.count++;
      if (n.first < 0) n.first = s;
      else if (n.second < 0) n.second = s;
    };
    visit(node);
    for (const key of path) {
      let next: SnapNode | undefined = node.children.get(key);
      if (next === undefined) node.children.set(key, (next = newNode()));
      node = next;
      visit(node);
    }
  });

  const reports: SnapReport[] = [];
  survivors.forEach((t, s) => {
    // Counts only shrink going down: the deepest node still shared by two survivors is the fork.
    let node = roots.get(t.agent)!;
    if (node.count < 2) return;
    let depth = 0;
    const path = keys[s]!;
    while (depth < path.length) {
      const next = node.children.get(path[depth]!)!;
      if (next.count < 2) break;
      node = next;
      depth++;
    }
    const other = survivors[node.first === s ? node.second : node.first]!;
    reports.push({ timeline: t.id, other: other.id, agent: t.agent, messageIndex: depth, reason: classifySnap(t, other, depth, options) });
  });
  return reports;
}

/** The same reports by comparing every pair of survivors: the reference for detectSnaps. */
export function detectSnapsPairwise(survivors: readonly Timeline[], options: Pick<MergeOptions, 'compareBy' | 'ignoreTools'>): SnapReport[] {
  const reports: SnapReport[] = [];
  for (const t of survivors) {
    let best: Timeline | undefined;
    let bestShared = -1;
    for (const o of survivors) {
      if (o === t || o.agent !== t.agent) continue;
      const shared = sharedPrefix(t, o, options.compareBy);
      if (shared > bestShared) {
        best = o;
        bestShared = shared;
      }
    }
    if (best !== undefined) {
      reports.push({ timeline: t.id, other: best.id, agent: t.agent, messageIndex: bestShared, reason: classifySnap(t, best, bestShared, options) });
    }
  }
  return reports;
}
