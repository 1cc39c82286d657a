/**
 * A tokenizer that is not the served one is refused with where the two tokenizations part (issue 36:
 * the message showed the first 12 ids of each, which were the same).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadTokenizer } from '../../src/model/tokenizer';
import { describeTokenMismatch, firstDifference } from '../../src/model/token-mismatch';
import { REPO_ROOT } from '../../src/paths';

test('firstDifference: the first differing index, the shorter length for a prefix, -1 for equal ids', () => {
  expect(firstDifference([1, 2, 3], [1, 2, 4])).toBe(2);
  expect(firstDifference([1, 2], [1, 2, 3])).toBe(2);
  expect(firstDifference([1, 2, 3], [1, 2])).toBe(2);
  expect(firstDifference([], [])).toBe(-1);
  expect(firstDifference([5, 6], [5, 6])).toBe(-1);
});

test('the served tokenizer and a file without the end-of-turn token: the message shows the ids where they part and the text up to there', () => {
  const served = loadTokenizer();
  // The file vLLM's test hands the remote engine (test/engine/vllm-server.test.ts): no <|eos|>.
  const json = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'assets', 'tokenizer.json'), 'utf8')) as { added_tokens: Array<{ content: string }> };
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'token-mismatch-')), 'foreign-tokenizer.json');
  fs.writeFileSync(file, JSON.stringify({ ...json, added_tokens: json.added_tokens.filter((t) => t.content !== '<|eos|>') }));
  const foreign = loadTokenizer(file);
  const probe = `Compute: 17+25*3\nACT 1: 17+25\n<calc>17+25</calc>\n<result>42</result>\n${served.eosToken}`;
  const a = served.encode(probe);
  const b = foreign.encode(probe);
  const at = a.indexOf(served.eosId);
  // What hid it: the first 12 ids of each are the same.
  expect(at).toBeGreaterThanOrEqual(12);
  expect(a.slice(0, 12)).toEqual(b.slice(0, 12));
  const message = describeTokenMismatch({ a: 'server', b: 'file' }, a, b, (ids) => foreign.decode(ids));
  expect(message).toContain(`first difference at id ${at} (0-based) of ${a.length} (server) / ${b.length} (file)`);
  expect(message).toContain(`>${served.eosId}<`);
  expect(message).toContain(`>${b[at]}<`);
  expect(message).toContain(JSON.stringify('42</result>\n').slice(1, -1));
  expect(message).toMatch(/where the file's ids go on with "<\|/);
});

test('one tokenization a prefix of the other: the shorter one ends there', () => {
  expect(describeTokenMismatch({ a: 'server', b: 'file' }, [1, 2, 3], [1, 2], () => 'ab')).toBe('first difference at id 2 (0-based) of 3 (server) / 2 (file): server [1, 2, >3<], file [1, 2]; both read "ab" up to there, where the file\'s ids end');
});
