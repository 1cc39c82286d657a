/** Text up to its last whole character: half a character's temporary U+FFFD is left out, an invalid byte's kept. */
import { decodeWhole, endsInsideCharacter } from '../../src/model/whole-characters';
import { loadTokenizer } from '../../src/model/tokenizer';

const tokenizer = loadTokenizer();
/** The vocabulary's token for one byte (the shipped vocabulary has all 256). */
const byteToken = (b: number): number => [...Array(tokenizer.vocabSize).keys()].find((id) => tokenizer.tokenBytes(id).length === 1 && tokenizer.tokenBytes(id)[0] === b)!;

test('leaves out the U+FFFD of a character whose last bytes have not come, at every length', () => {
  for (const ch of ['é', '€', '😀']) {
    const bytes = [...Buffer.from(`a${ch}`)];
    for (let n = 2; n < bytes.length; n++) {
      const ids = bytes.slice(0, n).map(byteToken);
      expect(tokenizer.decode(ids)).toBe('a\ufffd');
      expect([endsInsideCharacter(tokenizer, ids), decodeWhole(tokenizer, ids)]).toEqual([true, 'a']);
    }
    expect(decodeWhole(tokenizer, bytes.map(byteToken))).toBe(`a${ch}`);
  }
});

test('keeps the U+FFFD of bytes that can never be a character', () => {
  // A lone continuation byte, a lead byte followed by no continuation, and an invalid byte at the end.
  for (const [bytes, text] of [[[0x61, 0xa9], 'a\ufffd'], [[0xc3, 0x61], '\ufffda'], [[0x61, 0xff], 'a\ufffd'], [[0xe0, 0x80], '\ufffd\ufffd']] as const) {
    const ids = bytes.map(byteToken);
    expect(tokenizer.decode(ids)).toBe(text);
    expect(decodeWhole(tokenizer, ids)).toBe(text);
  }
  // ...but an unfinished character after them is still left out.
  expect(decodeWhole(tokenizer, [0xa9, 0xe2, 0x82].map(byteToken))).toBe('\ufffd');
});
