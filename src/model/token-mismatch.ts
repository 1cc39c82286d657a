/**
 * Where two tokenizations of one text part, said so a person can see it: the first position whose
 * ids differ, the ids of both around it, and the text the agreed ids cover up to there. Two
 * tokenizers usually agree on a long start (the same base vocabulary) and differ at one special
 * token, so the first ids of each would look the same.
 */

/** Ids shown on each side of the first difference. */
const AROUND = 4;

/** The first index where `a` and `b` differ (the shorter's length when one is a prefix of the other), or -1 if equal. */
export function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function window(ids: readonly number[], at: number): string {
  const from = Math.max(0, at - AROUND);
  const to = Math.min(ids.length, at + AROUND + 1);
  const shown = ids.slice(from, to).map((id, k) => (from + k === at ? `>${id}<` : String(id)));
  return `${from > 0 ? '…, ' : ''}[${shown.join(', ')}]${to < ids.length ? ', …' : ''}`;
}

/**
 * E.g. `first difference at id 23 (0-based) of 24 (server) / 27 (file): server …, [19, 20, 21, 22, >9<],
 * file …, [19, 20, 21, 22, >101<, 4, 5]; both read "…42</result>\n" up to there, where the file's ids
 * go on with "<|eos|>"`. `decode` reads `b`'s ids (the side whose vocabulary is known here) as text.
 */
export function describeTokenMismatch(names: { a: string; b: string }, a: readonly number[], b: readonly number[], decode?: (ids: number[]) => string): string {
  const at = firstDifference(a, b);
  if (at < 0) return `${names.a} and ${names.b} give the same ${a.length} ids`;
  const head = `first difference at id ${at} (0-based) of ${a.length} (${names.a}) / ${b.length} (${names.b}): ${names.a} ${window(a, at)}, ${names.b} ${window(b, at)}`;
  if (!decode) return head;
  const agreed = decode(b.slice(0, at));
  const shown = agreed.length > 40 ? `…${agreed.slice(-40)}` : agreed;
  const rest = at < b.length ? `go on with ${JSON.stringify(decode(b.slice(at, at + AROUND)))}` : 'end';
  return `${head}; both read ${JSON.stringify(shown)} up to there, where the ${names.b}'s ids ${rest}`;
}
