/**
 * The project's tokenizer: assets/tokenizer.json (trained by scripts/train-tokenizer.ts) loaded with
 * @huggingface/tokenizers, so the same file works unchanged in Python `tokenizers`/`transformers`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { EOS_TEXT } from '../planact/protocol';
import type { TextTokenizer } from './tokenizer-types';
import { REPO_ROOT } from '../paths';

export const EOS_TOKEN = EOS_TEXT;
export const PAD_TOKEN = '<|pad|>';
export const DEFAULT_TOKENIZER_PATH = 'assets/tokenizer.json';

/** Passed next to tokenizer.json; clean-up must be off or decode(encode(x)) would rewrite spaces. */
export const TOKENIZER_CONFIG = {
  tokenizer_class: 'PreTrainedTokenizerFast',
  eos_token: EOS_TOKEN,
  pad_token: PAD_TOKEN,
  clean_up_tokenization_spaces: false,
  add_bos_token: false,
  add_eos_token: false,
} as const;

/** The tokens that end a turn and pad a batch: the project's own, or a model directory's (Qwen3: <|im_end|>, <|endoftext|>). */
interface SpecialTokens {
  eos: string;
  pad: string;
}

class HfTextTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly eosId: number;
  readonly padId: number;
  readonly eosToken: string;

  constructor(
    private readonly tok: Tokenizer,
    special: SpecialTokens = { eos: EOS_TOKEN, pad: PAD_TOKEN },
  ) {
    const vocab = tok.get_vocab(true);
    // A loop, not Math.max(...ids): a 151k-token vocabulary (Qwen3) overflows the argument stack.
    let maxId = -1;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    this.vocabSize = maxId + 1;
    this.eosToken = special.eos;
    this.eosId = requireId(tok, special.eos);
    this.padId = requireId(tok, special.pad);
  }

  encode(text: string): number[] {
    if (text === '') return [];
    const { ids } = this.tok.encode(text, { add_special_tokens: false });
    if (ids.some((id) => id === undefined)) throw new Error(`text has bytes the tokenizer cannot encode: ${JSON.stringify(text.slice(0, 40))}`);
    return ids;
  }

  decode(ids: number[]): string {
    // The library rejects an empty array; an empty completion is legitimate here.
    if (ids.length === 0) return '';
    return this.tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  tokenBytes(id: number): number[] {
    const token = this.tok.id_to_token(id);
    if (token === undefined) throw new RangeError(`token id ${id} is not in the vocabulary`);
    // Added tokens (<|eos|>, <|pad|>) are written as themselves; vocabulary tokens in the byte alphabet.
    if (this.tok.get_added_tokens_decoder().has(id)) return [...Buffer.from(token, 'utf8')];
    return Array.from(token, (ch) => {
      const b = BYTE_OF_CHAR.get(ch);
      if (b === undefined) throw new Error(`token ${id} has a character outside the byte-level alphabet: ${JSON.stringify(ch)}`);
      return b;
    });
  }
}

/**
 * GPT-2's byte-level alphabet, inverted: the character a byte-level BPE token is written with, back
 * to the byte it stands for (printable bytes are themselves; the others are shifted past 255).
 */
const BYTE_OF_CHAR: ReadonlyMap<string, number> = (() => {
  const printable = (b: number) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  const map = new Map<string, number>();
  let shifted = 0;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(printable(b) ? b : 256 + shifted++), b);
  return map;
})();

function requireId(tok: Tokenizer, token: string): number {
  const id = tok.token_to_id(token);
  if (id === undefined) throw new Error(`tokenizer has no ${token} token`);
  return id;
}

/** From a parsed tokenizer.json (e.g. fetched from the blob store). */
export function tokenizerFromJson(tokenizerJson: object): TextTokenizer {
  return new HfTextTokenizer(new Tokenizer(tokenizerJson, TOKENIZER_CONFIG));
}

const cache = new Map<string, TextTokenizer>();

/**
 * A Hugging Face model directory's tokenizer (tokenizer.json next to tokenizer_config.json): its
 * eos_token ends turns, its pad_token (else eos) pads, its added tokens (<|im_start|>, <think>,
 * <tool_call>) encode as one id each. Decoding keeps spaces as they are, as the project's own does.
 */
export function loadTokenizerDir(dir: string): TextTokenizer {
  const resolved = path.resolve(REPO_ROOT, dir);
  const key = `dir:${resolved}`;
  let tok = cache.get(key);
  if (tok === undefined) {
    const config = JSON.parse(fs.readFileSync(path.join(resolved, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    tok = tokenizerFromDirFiles(JSON.parse(fs.readFileSync(path.join(resolved, 'tokenizer.json'), 'utf8')) as object, config, resolved);
    cache.set(key, tok);
  }
  return tok;
}

/** A model directory's tokenizer from its two files' contents (loadTokenizerDir; a checkpoint's files in the blob store). */
export function tokenizerFromDirFiles(tokenizerJson: object, config: Record<string, unknown>, where = 'the model directory'): TextTokenizer {
  const eos = tokenContent(config.eos_token);
  if (eos === undefined) throw new Error(`${where}/tokenizer_config.json has no eos_token`);
  return new HfTextTokenizer(new Tokenizer(tokenizerJson, { ...config, clean_up_tokenization_spaces: false }), { eos, pad: tokenContent(config.pad_token) ?? eos });
}

/** tokenizer_config.json writes a special token as a string or as an AddedToken object with `content`. */
export function tokenContent(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'object' && v !== null && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return undefined;
}

/** Loads (once per path) a tokenizer.json; relative paths are resolved against the repository root. */
export function loadTokenizer(file: string = DEFAULT_TOKENIZER_PATH): TextTokenizer {
  const resolved = path.resolve(REPO_ROOT, file);
  let tok = cache.get(resolved);
  if (tok === undefined) {
    tok = tokenizerFromJson(JSON.parse(fs.readFileSync(resolved, 'utf8')) as object);
    cache.set(resolved, tok);
  }
  return tok;
}

/**
 * A served model's tokenizer.json (inference.openai.tokenizer), or an Error saying why the Plan/Act
 * protocol cannot use it. The inference workers load it, and the main job before it starts a run.
 */
export function loadServedTokenizer(file: string): TextTokenizer {
  try {
    return loadTokenizer(file);
  } catch (err) {
    // The protocol ends turns with its own <|eos|> token: a tokenizer without it cannot serve.
    throw new Error(`${(err as Error).message} (the Plan/Act protocol needs the served tokenizer to have its <|eos|> and <|pad|> tokens)`);
  }
}

export interface TextSegment {
  text: string;
  /** true: model-written, trained on (loss mask 1); false: prompt or environment text. */
  train: boolean;
}

/**
 * Tokens and loss mask of a segmented text, one segment at a time so the mask follows segment
 * boundaries exactly (the protocol keeps those boundaries pre-token boundaries, so the tokens also
 * equal those of the joined text).
 */
export function tokenizeSegments(tok: TextTokenizer, segments: readonly TextSegment[]): { tokens: number[]; lossMask: number[] } {
  const tokens: number[] = [];
  const lossMask: number[] = [];
  for (const s of segments) {
    const ids = tok.encode(s.text);
    tokens.push(...ids);
    for (let i = 0; i < ids.length; i++) lossMask.push(s.train ? 1 : 0);
  }
  return { tokens, lossMask };
}
