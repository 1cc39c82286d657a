import fs from 'node:fs';
import path from 'node:path';
import { loadTokenizer, PAD_TOKEN, tokenizeSegments } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { EOS_TEXT, formatToolError } from '../../src/planact/protocol';
import type { ArithDifficulty } from '../../src/tasks/arith/difficulty';
import { generateProblems } from '../../src/tasks/arith/problem';
import { oracleSftExamples, sftExampleText, type SftExample } from '../../src/tasks/arith/sft';
import { DEFAULT_TRAIN_OPTIONS, preTokenize, trainTokenizerFile } from '../../scripts/train-tokenizer';

const DIFFICULTIES: ArithDifficulty[] = [
  { minTerms: 2, maxTerms: 4, minDigits: 1, maxDigits: 2, operators: ['+'] },
  { minTerms: 2, maxTerms: 5, minDigits: 1, maxDigits: 3, operators: ['+', '-', '*'] },
  { minTerms: 2, maxTerms: 8, minDigits: 1, maxDigits: 4, operators: ['+', '-', '*'] },
];

function examples(countPerDifficulty: number): SftExample[] {
  return DIFFICULTIES.flatMap((difficulty, i) =>
    generateProblems({ seed: 900 + i, count: countPerDifficulty, split: 'heldout', difficulty }).flatMap((p) => oracleSftExamples(p)),
  );
}

describe('tokenizer', () => {
  const tok = loadTokenizer();

  it('loads the shipped tokenizer with its special tokens', () => {
    expect(tok.vocabSize).toBeGreaterThanOrEqual(258);
    expect(tok.vocabSize).toBeLessThanOrEqual(512);
    expect(tok.eosToken).toBe(EOS_TEXT);
    expect(tok.encode(EOS_TEXT)).toEqual([tok.eosId]);
    expect(tok.encode(PAD_TOKEN)).toEqual([tok.padId]);
    expect(tok.decode([tok.eosId])).toBe(EOS_TEXT);
    expect(tok.encode('')).toEqual([]);
    expect(tok.decode([])).toBe('');
    expect(loadTokenizer(path.join(REPO_ROOT, 'assets/tokenizer.json'))).toBe(tok);
  });

  it('spells digits and operators one per token and keeps protocol words whole', () => {
    const pieces = (text: string) => tok.encode(text).map((id) => tok.decode([id]));
    expect(pieces('ACT 3: 42+-39\n')).toEqual(['ACT ', '3', ': ', '4', '2', '+', '-', '3', '9', '\n']);
    expect(pieces('<calc>2*3</calc>')).toEqual(['<calc>', '2', '*', '3', '</calc>']);
  });

  it('round-trips every task text exactly', () => {
    const texts = examples(100).map(sftExampleText);
    texts.push(
      `Evaluate: 3x\n<calc>3x</calc>${formatToolError('unexpected character "x" at 1')}`,
      'ANSWER: -0\n',
      'unicode ✓ héllo\ttabs  and  spaces \r\n',
      `${PAD_TOKEN}${PAD_TOKEN}${EOS_TEXT}`,
    );
    for (const text of texts) expect(tok.decode(tok.encode(text))).toBe(text);
  });

  it('tokenizes segments with an exact loss mask, equal to tokenizing the joined text', () => {
    for (const ex of examples(40)) {
      const { tokens, lossMask } = tokenizeSegments(tok, ex.segments);
      expect(lossMask).toHaveLength(tokens.length);
      expect(tokens).toEqual(tok.encode(sftExampleText(ex)));
      let at = 0;
      for (const s of ex.segments) {
        const n = tok.encode(s.text).length;
        expect(lossMask.slice(at, at + n)).toEqual(new Array(n).fill(s.train ? 1 : 0));
        at += n;
      }
      // Every model turn ends with EOS, trained on.
      const eosPositions = tokens.flatMap((t, i) => (t === tok.eosId ? [i] : []));
      expect(eosPositions.length).toBeGreaterThan(0);
      for (const i of eosPositions) expect(lossMask[i]).toBe(1);
    }
  });

  it('fits the policy context at the hardest difficulty', () => {
    const longest = Math.max(...examples(100).map((ex) => tok.encode(sftExampleText(ex)).length));
    expect(longest).toBeLessThanOrEqual(384);
  });

  it('ships the exact output of the deterministic trainer', () => {
    expect(preTokenize('Compute: 17+5\n')).toEqual(['Compute:Ġ', '1', '7', '+', '5', 'Ċ']);
    const shipped = fs.readFileSync(path.join(REPO_ROOT, 'assets/tokenizer.json'), 'utf8');
    expect(trainTokenizerFile(DEFAULT_TRAIN_OPTIONS)).toBe(shipped);
  });
});
