/**
 * Trains the project's byte-level BPE tokenizer on Plan/Act transcripts of the arithmetic task and
 * writes assets/tokenizer.json (Hugging Face format) and assets/tokenizer_config.json.
 *
 *   node dist/scripts/train-tokenizer.js [--out assets] [--vocab-size 512] [--min-frequency 2]
 *
 * Pre-tokenization: every ASCII digit, operator (+ - *) and newline is its own piece (Split,
 * Isolated), the rest is byte-mapped GPT-2 style (ByteLevel, no regex). Expressions are thus spelled
 * one character per token, so the tiny policy copies any number or sign character by character
 * instead of learning one embedding per multi-digit chunk; isolated newlines
 * make every boundary between model and environment text (which the protocol puts next to a
 * newline, a digit or EOS) a piece boundary, so contexts tokenize the same whole or in segments.
 * Between those cuts BPE may merge freely, giving single tokens such as "<calc>" or "RESULT ".
 *
 * The output is a pure function of the options: fixed seeds, and ties between equally frequent
 * pairs broken by the pair's text.
 */
import fs from 'node:fs';
import path from 'node:path';
import { EOS_TEXT } from '../src/planact/protocol';
import { formatToolError } from '../src/planact/protocol';
import { arithActorPrompt, CalcInputError, evaluateExpression, generateProblems, oracleSftExamples, sftExampleText, type ArithDifficulty } from '../src/tasks/arith';
import { PAD_TOKEN, TOKENIZER_CONFIG } from '../src/model/tokenizer';
import { REPO_ROOT } from '../src/paths';

export const SPECIAL_TOKENS = [EOS_TEXT, PAD_TOKEN] as const;
/** Oniguruma and JS agree on this pattern; [0-9] rather than \d, which is Unicode-wide in Rust. */
export const SPLIT_PATTERN = '[0-9]|[+*-]|\\n';

/** GPT-2's reversible byte -> printable character table (index = byte). */
export function bytesToUnicode(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const table: string[] = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    table[b] = String.fromCharCode(printable.includes(b) ? b : 256 + extra++);
  }
  return table;
}

const BYTE_CHARS = bytesToUnicode();
const utf8 = new TextEncoder();

/** Same pieces as the tokenizer.json pre_tokenizer below, specials removed (they never merge). */
export function preTokenize(text: string): string[] {
  const pieces: string[] = [];
  const specials = new RegExp(SPECIAL_TOKENS.map((s) => s.replace(/[|]/g, '\\|')).join('|'), 'g');
  for (const chunk of text.split(specials)) {
    let prev = 0;
    for (const m of chunk.matchAll(new RegExp(SPLIT_PATTERN, 'g'))) {
      if (m.index > prev) pieces.push(chunk.slice(prev, m.index));
      pieces.push(m[0]);
      prev = m.index + m[0].length;
    }
    if (prev < chunk.length) pieces.push(chunk.slice(prev));
  }
  return pieces.map((p) => Array.from(utf8.encode(p), (b) => BYTE_CHARS[b]!).join(''));
}

export interface BpeOptions {
  vocabSize: number;
  minFrequency: number;
}

export interface BpeModel {
  /** Token strings by id: specials, the 256 byte characters, then one per merge. */
  vocab: string[];
  merges: Array<[string, string]>;
}

/** Classic BPE: repeatedly merge the most frequent adjacent pair (ties: smallest pair text). */
export function trainBpe(corpus: readonly string[], opts: BpeOptions): BpeModel {
  const counts = new Map<string, number>();
  for (const text of corpus) for (const piece of preTokenize(text)) counts.set(piece, (counts.get(piece) ?? 0) + 1);
  const words = [...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([w, n]) => ({ symbols: Array.from(w), n }));
  const vocab = [...SPECIAL_TOKENS, ...BYTE_CHARS];
  const merges: Array<[string, string]> = [];
  while (vocab.length < opts.vocabSize) {
    const pairs = new Map<string, { a: string; b: string; n: number }>();
    for (const w of words) {
      for (let i = 0; i + 1 < w.symbols.length; i++) {
        const a = w.symbols[i]!;
        const b = w.symbols[i + 1]!;
        const key = `${a}\u0000${b}`;
        const p = pairs.get(key);
        if (p) p.n += w.n;
        else pairs.set(key, { a, b, n: w.n });
      }
    }
    let best: { key: string; a: string; b: string; n: number } | undefined;
    for (const [key, p] of pairs) {
      if (!best || p.n > best.n || (p.n === best.n && key < best.key)) best = { key, ...p };
    }
    if (!best || best.n < opts.minFrequency) break;
    const merged = best.a + best.b;
    merges.push([best.a, best.b]);
    vocab.push(merged);
    for (const w of words) {
      const out: string[] = [];
      for (let i = 0; i < w.symbols.length; i++) {
        if (i + 1 < w.symbols.length && w.symbols[i] === best.a && w.symbols[i + 1] === best.b) {
          out.push(merged);
          i++;
        } else out.push(w.symbols[i]!);
      }
      w.symbols = out;
    }
  }
  return { vocab, merges };
}

export function tokenizerJson(model: BpeModel): object {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((content) => ({
      id: model.vocab.indexOf(content),
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: SPLIT_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: Object.fromEntries(model.vocab.map((t, id) => [t, id])),
      merges: model.merges.map(([a, b]) => `${a} ${b}`),
    },
  };
}

/** Difficulties the corpus covers, so every operator and length the task can produce is seen. */
const CORPUS_DIFFICULTIES: ArithDifficulty[] = [
  { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+'] },
  { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+', '-'] },
  { minTerms: 2, maxTerms: 5, minDigits: 1, maxDigits: 3, operators: ['+', '-', '*'] },
  { minTerms: 2, maxTerms: 8, minDigits: 1, maxDigits: 4, operators: ['+', '-', '*'] },
];

/** Malformed calculator calls, so the error texts the actor may see are in the vocabulary too. */
const BAD_CALLS = ['', '17+', '+5', '17++25', '4*', '3x+2', '(1+2)', '1/2', '17 25', '9999999999999', '999999*999999*9', '-'.repeat(3) + '1', '1'.repeat(130)];

export function tokenizerCorpus(problemsPerDifficulty: number, seed = 1): string[] {
  const texts: string[] = [];
  CORPUS_DIFFICULTIES.forEach((difficulty, i) => {
    for (const p of generateProblems({ seed: seed + i, count: problemsPerDifficulty, split: 'train', difficulty })) {
      for (const ex of oracleSftExamples(p)) texts.push(sftExampleText(ex));
    }
  });
  for (const call of BAD_CALLS) {
    try {
      evaluateExpression(call);
    } catch (err) {
      if (!(err instanceof CalcInputError)) throw err;
      texts.push(`${arithActorPrompt(call)}<calc>${call}</calc>${formatToolError(err.message)}`);
    }
  }
  return texts;
}

export interface TrainTokenizerOptions extends BpeOptions {
  problemsPerDifficulty: number;
}

export const DEFAULT_TRAIN_OPTIONS: TrainTokenizerOptions = { vocabSize: 512, minFrequency: 100, problemsPerDifficulty: 2000 };

/**
 * Pretty JSON with the vocab in id order: JSON.stringify would hoist integer-like keys ("0".."9")
 * to the front, which is legal but hides the id layout from a person reading the file.
 */
export function serializeTokenizerJson(model: BpeModel): string {
  const json = tokenizerJson(model) as { model: { vocab: unknown } };
  const placeholder = '__VOCAB_IN_ID_ORDER__';
  json.model.vocab = placeholder;
  const vocab = model.vocab.map((t, id) => `      ${JSON.stringify(t)}: ${id}`).join(',\n');
  return `${JSON.stringify(json, null, 2).replace(JSON.stringify(placeholder), `{\n${vocab}\n    }`)}\n`;
}

/** The exact bytes of assets/tokenizer.json for these options. */
export function trainTokenizerFile(opts: TrainTokenizerOptions = DEFAULT_TRAIN_OPTIONS): string {
  return serializeTokenizerJson(trainBpe(tokenizerCorpus(opts.problemsPerDifficulty), opts));
}

function main(argv: string[]): void {
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const opts: TrainTokenizerOptions = {
    vocabSize: Number(arg('vocab-size') ?? DEFAULT_TRAIN_OPTIONS.vocabSize),
    minFrequency: Number(arg('min-frequency') ?? DEFAULT_TRAIN_OPTIONS.minFrequency),
    problemsPerDifficulty: Number(arg('problems') ?? DEFAULT_TRAIN_OPTIONS.problemsPerDifficulty),
  };
  const outDir = path.resolve(REPO_ROOT, arg('out') ?? 'assets');
  fs.mkdirSync(outDir, { recursive: true });
  const json = trainTokenizerFile(opts);
  fs.writeFileSync(path.join(outDir, 'tokenizer.json'), json);
  fs.writeFileSync(path.join(outDir, 'tokenizer_config.json'), `${JSON.stringify(TOKENIZER_CONFIG, null, 2)}\n`);
  const vocabSize = Object.keys((JSON.parse(json) as { model: { vocab: object } }).model.vocab).length;
  console.log(`wrote ${path.join(outDir, 'tokenizer.json')}: ${vocabSize} tokens`);
}

if (require.main === module) main(process.argv.slice(2));
