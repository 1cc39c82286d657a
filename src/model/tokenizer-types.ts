/** The tokenizer surface the rest of the project uses (engine, datasets, timelines). */
export interface TextTokenizer {
  readonly vocabSize: number;
  /** Ends every model turn; generation stops when it is sampled. */
  readonly eosId: number;
  readonly padId: number;
  readonly eosToken: string;
  encode(text: string): number[];
  decode(ids: number[]): string;
}
