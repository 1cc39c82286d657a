/**
 * Where two id sequences differ: Myers' O(ND) diff, as hunks between common runs. Small by design
 * (a conversation's kept ids against its full render differ in a few places); past maxEdits it gives
 * up and reports the rest as one hunk rather than running quadratic.
 */

/** a[aStart, aEnd) was replaced by b[bStart, bEnd) (either side may be empty). */
export interface Hunk {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

export function diffIds(a: readonly number[], b: readonly number[], maxEdits = 4000): Hunk[] {
  // The common prefix and suffix are most of a conversation: keep them out of the search.
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const n = a.length - pre - suf;
  const m = b.length - pre - suf;
  if (n === 0 && m === 0) return [];
  const pairs = commonPairs(a.slice(pre, pre + n), b.slice(pre, pre + m), maxEdits);
  if (pairs === undefined) return [{ aStart: pre, aEnd: pre + n, bStart: pre, bEnd: pre + m }];
  const hunks: Hunk[] = [];
  let i = 0;
  let j = 0;
  for (const [x, y] of [...pairs, [n, m] as const]) {
    if (x > i || y > j) hunks.push({ aStart: pre + i, aEnd: pre + x, bStart: pre + j, bEnd: pre + y });
    i = x + 1;
    j = y + 1;
  }
  return hunks;
}

/** The matched index pairs of a longest common subsequence (Myers), or undefined past maxEdits. */
function commonPairs(a: readonly number[], b: readonly number[], maxEdits: number): [number, number][] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, offset, d, n, m, a, b);
    }
    v = next;
  }
  return undefined;
}

function backtrack(trace: Int32Array[], offset: number, dEnd: number, n: number, m: number, a: readonly number[], b: readonly number[]): [number, number][] {
  const pairs: [number, number][] = [];
  let x = n;
  let y = m;
  for (let d = dEnd; d >= 0; d--) {
    const prev = trace[d]!;
    const k = x - y;
    let prevK: number;
    if (d === 0) prevK = 0;
    else prevK = k === -d || (k !== d && prev[offset + k - 1]! < prev[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : prev[offset + prevK]!;
    const prevY = prevX - prevK;
    // The diagonal run (snake) after this step's one edit.
    const startX = d === 0 ? 0 : prevK === k + 1 ? prevX : prevX + 1;
    const startY = d === 0 ? 0 : startX - k;
    while (x > startX && y > startY) {
      x--;
      y--;
      if (a[x] !== b[y]) throw new Error('diffIds: backtrack left the diagonal');
      pairs.push([x, y]);
    }
    x = prevX;
    y = prevY;
  }
  return pairs.reverse();
}
