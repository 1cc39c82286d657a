/**
 * Decoded text up to its last whole character. A byte-level token may end inside a UTF-8 character:
 * decode shows the bytes so far as one U+FFFD until the rest arrive, a character that is not there
 * yet, so stop strings must not match it and a stream must not send it (vLLM's incremental
 * detokenizer holds it back the same way). A U+FFFD for bytes that can never become a character (an
 * invalid byte) is text like any other and stays.
 */
import type { TextTokenizer } from './tokenizer-types';

/** `ids` decoded (or their decoded `text`), without the U+FFFD of a character whose last bytes have not come. */
export function decodeWhole(tokenizer: TextTokenizer, ids: readonly number[], text: string = tokenizer.decode([...ids])): string {
  return endsInsideCharacter(tokenizer, ids) ? text.slice(0, -1) : text;
}

/**
 * Whether the ids' bytes end with the first bytes of a UTF-8 character but not all of them. decode
 * reads the bytes as UTF-8 with replacement (WHATWG's rules), so the last three bytes, read as a
 * stream, hold back exactly such an unfinished character.
 */
export function endsInsideCharacter(tokenizer: TextTokenizer, ids: readonly number[]): boolean {
  const tail: number[] = [];
  for (let i = ids.length - 1; i >= 0 && tail.length < 3; i--) tail.unshift(...tokenizer.tokenBytes(ids[i]!));
  const bytes = Uint8Array.from(tail.slice(-3));
  return new TextDecoder().decode(bytes, { stream: true }).length !== new TextDecoder().decode(bytes).length;
}
