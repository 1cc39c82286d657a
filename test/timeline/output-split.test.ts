import { mergeAgentTimelines } from '../../src/timeline/agent-merge';
import { TimelineSchema } from '../../src/config/schema';
import { mergeTimelines, timelineToSample, type Timeline } from '../../src/timeline';
import { splitAtOutputs } from '../../src/timeline/output-split';
import { env, llm, snapshot, tl } from './helpers';

// A ChatML conversation as the recording proxy records it: each prompt cut where the template ends
// a message, the assistant header a piece of its own, the output the model's ids up to <|im_end|>.
const END = '<|im_end|>';
const U1 = env(`<|im_start|>user\nWhat is 12+34?${END}\n`);
const H = env('<|im_start|>assistant\n');
const O1 = `<tool_call>\n{"name": "calc", "arguments": {"expression": "12+34"}}\n</tool_call>${END}`;
const T1 = env(`<|im_start|>user\n<tool_response>\n46\n</tool_response>${END}\n`);
const O2 = `46${END}`;
const U2 = env(`<|im_start|>user\nAnd 7*6?${END}\n`);
const O3 = `42${END}`;

/** The three calls of a ChatML episode: every earlier turn rendered back as the output plus the template's newline. */
function chatml(): Timeline[] {
  return [
    tl('t1', [U1, H, llm(O1)]),
    tl('t2', [U1, H, env(`${O1}\n`), T1, H, llm(O2)]),
    tl('t3', [U1, H, env(`${O1}\n`), T1, H, env(`${O2}\n`), U2, H, llm(O3)]),
  ];
}

const allIds = (t: Timeline) => t.messages.flatMap((m) => m.tokenIds);

describe('splitAtOutputs', () => {
  it("parts ChatML's newline after <|im_end|> off each earlier turn, so the episode merges into one sample with the server's ids", () => {
    const input = chatml();
    const before = snapshot(input);
    // Before: the turn plus newline never equals the output, and the three calls stay three samples.
    expect(mergeTimelines(input).timelines).toHaveLength(3);

    const { timelines, split } = splitAtOutputs(input, 'text');
    expect(split).toBe(3);
    expect(input).toEqual(before);
    expect(timelines[0]).toBe(input[0]);
    expect(timelines[2]!.messages.map((m) => m.text)).toEqual([U1.text, H.text, O1, '\n', T1.text, H.text, O2, '\n', U2.text, H.text, O3]);
    // Slices of the same ids: the server's prompt is unchanged.
    timelines.forEach((t, k) => expect(allIds(t)).toEqual(allIds(input[k]!)));

    const merged = mergeTimelines(timelines);
    expect(merged.timelines.map((t) => t.id)).toEqual(['t3']);
    const sample = timelineToSample(merged.timelines[0]!, { reward: 1, metadata: { role: 'single', episodeId: 'e', turn: 0, weightVersion: 0 } })!;
    expect([...sample.promptTokens, ...sample.responseTokens]).toEqual(allIds(input[2]!));
    const mask = (text: string, m: 0 | 1) => Array.from(text, () => m);
    expect(sample.lossMask).toEqual([...mask(O1, 1), ...mask(`\n${T1.text}${H.text}`, 0), ...mask(O2, 1), ...mask(`\n${U2.text}${H.text}`, 0), ...mask(O3, 1)]);
  });

  it('splits a turn glued to the messages after it (a template that renders its last message otherwise, as Qwen3 does)', () => {
    const t2 = tl('t2', [U1, H, env(`${O1}\n${T1.text}`), H, llm(O2)]);
    const { timelines, split } = splitAtOutputs([tl('t1', [U1, H, llm(O1)]), t2], 'token');
    expect(split).toBe(1);
    expect(timelines[1]!.messages.map((m) => m.text)).toEqual([U1.text, H.text, O1, `\n${T1.text}`, H.text, O2]);
    expect(mergeTimelines(timelines, { compareBy: 'token', ignoreTools: true, snapDetection: false }).timelines.map((t) => t.id)).toEqual(['t2']);
  });

  it('splits nothing where the template rewrote the turn (thinking dropped), or the context before it differs', () => {
    const thought = `<think>\nadd them\n</think>\n\n${O1}`;
    const rewritten = [tl('t1', [U1, H, llm(thought)]), tl('t2', [U1, H, env(`${O1}\n`), T1, H, llm(O2)])];
    expect(splitAtOutputs(rewritten, 'text').split).toBe(0);
    expect(mergeTimelines(splitAtOutputs(rewritten, 'text').timelines).timelines).toHaveLength(2);
    // Another user message before it, another agent, an env message in the output's place: no split.
    const other = tl('t2', [env('<|im_start|>user\nWhat is 1+1?<|im_end|>\n'), H, env(`${O1}\n`), T1, H, llm(O2)]);
    expect(splitAtOutputs([tl('t1', [U1, H, llm(O1)]), other], 'text').split).toBe(0);
    expect(splitAtOutputs([tl('t1', [U1, H, llm(O1)]), { ...chatml()[1]!, agent: 'b' }], 'text').split).toBe(0);
    expect(splitAtOutputs([tl('t1', [U1, H, env(O1)]), chatml()[1]!], 'text').split).toBe(0);
  });

  it('splits only where ids and text both begin with the output, and never the output itself or a message equal to it', () => {
    const t1 = tl('t1', [U1, H, llm(O1)]);
    // Same text, other ids (re-tokenized): no id boundary to cut at.
    const drifted = tl('t2', [U1, H, env(`${O1}\n`, [7, ...Array.from(`${O1}\n`, (c) => c.codePointAt(0)!).slice(1)]), T1, H, llm(O2)]);
    expect(splitAtOutputs([t1, drifted], 'text').split).toBe(0);
    expect(splitAtOutputs([t1, tl('t2', [U1, H, env(O1), T1, H, llm(O2)])], 'text').split).toBe(0);
    expect(splitAtOutputs([t1, tl('t2', [U1, H, llm(`${O1}\n`)])], 'text').split).toBe(0);
  });

  it('is applied by the episode merge (mergeAgentTimelines); timeline.merge false leaves every call its own sample', () => {
    const merged = mergeAgentTimelines(chatml(), TimelineSchema.parse({}));
    expect(merged.counts).toMatchObject({ captured: 3, merged: 1 });
    expect([...merged.samples[0]!.sample.promptTokens, ...merged.samples[0]!.sample.responseTokens]).toEqual(allIds(chatml()[2]!));
    expect(mergeAgentTimelines(chatml(), TimelineSchema.parse({ merge: false })).counts.merged).toBe(3);
  });
});
