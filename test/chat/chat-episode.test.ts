/**
 * The chat episode driver and its kept conversation (src/tasks/arith/chat-episode.ts,
 * src/chat/kept-episode.ts), on the real Qwen3 tokenizer and template, with a scripted engine that
 * returns chosen ids: the ids kept are exactly the prompt render plus what the engine returned plus
 * rendered deltas; malformed tool calls are answered and counted; and the SFT demonstrations are
 * what the rollout keeps when the model writes them (the same ids, the same mask).
 */
import { formatHermesToolCalls, loadChatModel, type ChatModel } from '../../src/chat';
import { advanceKeptEpisode, keptSample, type KeptEpisode } from '../../src/chat/kept-episode';
import type { Completion } from '../../src/domain/types';
import { chatConversationOptions } from '../../activities/chat-episodes';
import { CALC_TOOL_NAME, calc, chatDemonstration, chatProblemMessages, playChatEpisode, problemFromExpression, type ChatEpisodeIO } from '../../src/tasks/arith';
import { QWEN3_DIR } from './chat-models';

const opts = chatConversationOptions({ enableThinking: false });
let model: ChatModel;
beforeAll(() => {
  model = loadChatModel(QWEN3_DIR);
});

/** Plays a problem against a scripted model: each turn's text (end-of-turn appended), encoded to ids. */
async function playScripted(expression: string, turns: string[]) {
  let kept: KeptEpisode | undefined;
  const returned: number[][] = [];
  let t = 0;
  const io: ChatEpisodeIO = {
    turn: async (env) => {
      const ids = model.tokenizer.encode(turns[t++]! + model.tokenizer.eosToken);
      returned.push(ids);
      const step = await advanceKeptEpisode(model, opts, kept, kept ? env : chatProblemMessages(expression), async (prompt) => {
        const c: Completion = { text: '', promptTokenIds: [...prompt], tokenIds: ids, logprobs: ids.map((_, i) => -0.5 - i), entropy: ids.map(() => 0), finishReason: 'eos' };
        return { completion: c, weightVersion: 3 };
      });
      kept = step.episode;
      return { parsed: step.parsed, finishReason: 'stop' };
    },
    calc: async (e) => calc(e),
  };
  const outcome = await playChatEpisode(problemFromExpression(expression), io, { maxTurns: 4 });
  return { outcome, kept: kept!, returned };
}

const call = (args: Record<string, unknown> | string) => formatHermesToolCalls([{ name: CALC_TOOL_NAME, arguments: args }]);

describe('chat episodes', () => {
  it('keeps the engine ids of every turn as they came, masks the rest, and trains them with their logprobs', async () => {
    const { outcome, kept, returned } = await playScripted('17+25', [call({ expression: '17+25' }), '42']);
    expect(outcome).toMatchObject({ answer: '42', reward: 1, turns: 2, toolCalls: 1, malformedToolCalls: 0 });
    const ids = kept.conversation.ids;
    const firstPrompt = model.tokenizer.encode(model.template.render(chatProblemMessages('17+25'), { tools: opts.tools, enableThinking: false, addGenerationPrompt: true }));
    expect(ids.slice(0, firstPrompt.length)).toEqual(firstPrompt);
    // Each model span is exactly one engine answer, in order; everything else has mask 0.
    const spans = kept.conversation.spans.filter((s) => s.source === 'model');
    expect(spans.map((s) => ids.slice(s.start, s.end))).toEqual(returned);
    expect(kept.conversation.modelMask).toEqual(ids.map((_, i) => (spans.some((s) => i >= s.start && i < s.end) ? 1 : 0)));
    // The tool result went in as text the template wrapped as a tool response.
    expect(model.tokenizer.decode(ids)).toContain('<tool_response>\n42\n</tool_response>');
    const sample = keptSample(model, opts, kept);
    expect([...sample.promptTokens, ...sample.responseTokens]).toEqual(ids);
    expect(sample.promptTokens).toEqual(firstPrompt);
    expect(sample.lossMask).toEqual(kept.conversation.modelMask.slice(firstPrompt.length));
    expect(sample.logprobs).toEqual(kept.logprobs.slice(firstPrompt.length));
    expect(sample.logprobs.filter((_, i) => sample.lossMask[i] === 0).every((x) => x === 0)).toBe(true);
    expect(sample.logprobs.filter((_, i) => sample.lossMask[i] === 1)).toEqual(returned.flatMap((r) => r.map((_, i) => -0.5 - i)));
    // Qwen3 drops the empty think block of the earlier turn from a full render: a counted, expected mismatch; nothing unaligned.
    expect(sample.check.counts.text).toBe(0);
    expect(sample.check.counts['thinking-rewrite']).toBeGreaterThan(0);
    expect(kept.weightVersions).toEqual([3, 3]);
  });

  it('answers malformed tool calls as the environment would and counts them, never crashing', async () => {
    const { outcome, kept } = await playScripted('17+25', [
      '<tool_call>\n{"name": "calc", "arguments": {"expression": 17+25}}\n</tool_call>', // not JSON
      formatHermesToolCalls([{ name: 'adder', arguments: { a: 17 } }]), // a tool not offered
      call({ expr: '17+25' }), // no "expression"
      call({ expression: '17+25' }),
    ]);
    expect(outcome).toMatchObject({ answer: null, reward: 0, turns: 4, toolCalls: 3, malformedToolCalls: 3, failure: 'max-turns' });
    const text = model.tokenizer.decode(kept.conversation.ids);
    expect(text).toContain('Your tool call could not be read (bad-json)');
    expect(text).toContain('error: no tool named \\"adder\\"'.replace(/\\"/g, '"'));
    expect(text).toContain('error: arguments need a string "expression"');
  });

  it('an SFT demonstration is the episode the rollout keeps when the model writes the oracle turns: same ids, same mask', async () => {
    const problem = problemFromExpression('17+25+8');
    const demo = chatDemonstration(problem, model, opts, 1);
    expect(demo.usesTool).toBe(true);
    const { kept, outcome } = await playScripted('17+25+8', [call({ expression: '17+25+8' }), '50']);
    expect(outcome.reward).toBe(1);
    expect(demo.tokens).toEqual(kept.conversation.ids);
    expect(demo.lossMask).toEqual(kept.conversation.modelMask);
    // Not the full render's ids: Qwen3 renders the earlier turn without the think block the model saw.
    const full = model.tokenizer.encode(model.template.render([...chatProblemMessages('17+25+8'), { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'calc', arguments: { expression: '17+25+8' } } }] }, { role: 'tool', content: '50' }, { role: 'assistant', content: '50' }], { tools: opts.tools, enableThinking: false }));
    expect(full).not.toEqual(demo.tokens);
    const direct = chatDemonstration(problem, model, opts, 0);
    expect(direct.usesTool).toBe(false);
    expect(model.tokenizer.decode(direct.tokens.filter((_, i) => direct.lossMask[i] === 1))).toBe(`50${model.tokenizer.eosToken}`);
  });
});
