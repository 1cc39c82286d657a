import type { TextTokenizer } from '../../src/model/tokenizer-types';

/** Character-level tokenizer for engine tests: 0 = pad, 1 = eos, then one id per character. */
export class CharTokenizer implements TextTokenizer {
  readonly padId = 0;
  readonly eosId = 1;
  readonly eosToken = '<eos>';
  readonly vocabSize: number;
  private readonly ids = new Map<string, number>();

  constructor(readonly chars: string) {
    [...chars].forEach((c, i) => this.ids.set(c, i + 2));
    this.vocabSize = chars.length + 2;
  }

  encode(text: string): number[] {
    return [...text].map((c) => {
      const id = this.ids.get(c);
      if (id === undefined) throw new Error(`no id for ${JSON.stringify(c)}`);
      return id;
    });
  }

  decode(ids: number[]): string {
    return ids.map((i) => (i === this.eosId ? this.eosToken : i === this.padId ? '' : this.chars[i - 2] ?? '')).join('');
  }

  tokenBytes(id: number): number[] {
    return [...Buffer.from(this.decode([id]), 'utf8')];
  }
}
