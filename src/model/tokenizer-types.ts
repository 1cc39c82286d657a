/** The tokenizer surface the rest of the project uses (engine, datasets, timelines). */
export interface TextTokenizer {
  readonly vocabSize: number;
  /** Ends every model turn; generation stops when it is sampled. */
  readonly eosId: number;
  readonly padId: number;
  readonly eosToken: string;
  encode(text: string): number[];
  decode(ids: number[]): string;
  /** The UTF-8 bytes one token stands for (a token may hold part of a character, which decode cannot show). */
  tokenBytes(id: number): number[];
}
