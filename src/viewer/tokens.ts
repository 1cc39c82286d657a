/** Token ids to the pieces of text the page draws, one per token, with what hovering shows. */
import type { TextTokenizer } from '../model/tokenizer-types';

/** One drawn token: its text, id, and (response tokens) logprob, loss mask and token advantage. */
export interface TokenPiece {
  t: string;
  id: number;
  lp?: number;
  m?: number;
  a?: number;
}

/**
 * The text each token adds. Byte-level tokens may split a character: the bytes are decoded as a
 * stream, so a character shows on the token that completes it and the tokens before it show "".
 */
export function tokenTexts(tok: TextTokenizer, ids: readonly number[]): string[] {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  const out = ids.map((id) => decoder.decode(Uint8Array.from(tok.tokenBytes(id)), { stream: true }));
  const rest = decoder.decode();
  if (rest && out.length > 0) out[out.length - 1] += rest;
  return out;
}

const round = (x: number, digits: number) => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

export function responsePieces(
  tok: TextTokenizer,
  ids: readonly number[],
  logprobs: readonly number[],
  mask: readonly number[],
  tokenAdvantages?: readonly number[],
): TokenPiece[] {
  const texts = tokenTexts(tok, ids);
  return ids.map((id, i) => ({
    t: texts[i]!,
    id,
    lp: round(logprobs[i] ?? 0, 4),
    m: mask[i] ?? 0,
    ...(tokenAdvantages ? { a: round(tokenAdvantages[i] ?? 0, 4) } : {}),
  }));
}

export function promptPieces(tok: TextTokenizer, ids: readonly number[]): TokenPiece[] {
  const texts = tokenTexts(tok, ids);
  return ids.map((id, i) => ({ t: texts[i]!, id }));
}
