/** Values shaped for the Web UI (results, memos, queries): rounded means and text previews. */

/** The mean, rounded to 4 decimals for the Web UI (0 for no values). */
export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : Math.round((xs.reduce((a, b) => a + b, 0) / xs.length) * 1e4) / 1e4;
}

/** Long model text cut for the Web UI; the full text stays in the token blobs. */
export function preview(text: string, max = 240): string {
  return text.length > max ? `${text.slice(0, max)}... (${text.length} chars)` : text;
}
