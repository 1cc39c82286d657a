/**
 * The TS render equals transformers' apply_chat_template(..., tokenize=False) byte for byte, and the
 * TS tokenizer's ids equal transformers' on the rendered text, on 1,200 random conversations
 * (Qwen3's template with and without tools, and plain ChatML), rendered by transformers in one
 * Python process. Half of them go through vLLM's own _postprocess_messages on the Python side and
 * asVllmRenders on this side, so the vLLM-side argument handling is checked too.
 */
import { ChatTemplate, ChatTemplateError, asVllmRenders } from '../../src/chat';
import { loadTokenizerDir } from '../../src/model/tokenizer';
import { QWEN3_DIR, chatmlModelDir, runPythonPeer, type PyRender } from './chat-models';
import { CALC_TOOL, randomRender } from './random-chats';

const COUNT = 1200;

it(`renders ${COUNT} random conversations as transformers does, and tokenizes them as transformers does`, () => {
  const dirs = { qwen3: QWEN3_DIR, chatml: chatmlModelDir() };
  const templates = { qwen3: ChatTemplate.fromDir(dirs.qwen3), chatml: ChatTemplate.fromDir(dirs.chatml) };
  const tok = loadTokenizerDir(QWEN3_DIR);
  const cases = Array.from({ length: COUNT }, (_, i) => randomRender(1000 + i));
  const requests: PyRender[] = cases.map((c) => ({
    model: dirs[c.template],
    messages: c.messages,
    ...(c.tools === undefined ? {} : { tools: c.tools }),
    add_generation_prompt: c.addGenerationPrompt,
    ...(c.enableThinking === undefined ? {} : { enable_thinking: c.enableThinking }),
    vllm: c.vllm,
  }));
  const py = runPythonPeer({ renders: requests });
  let withTools = 0;
  let parallel = 0;
  for (const [i, c] of cases.entries()) {
    const want = py.renders[i]!;
    if ('error' in want) throw new Error(`case ${i}: transformers failed: ${want.error}`);
    const messages = c.vllm ? asVllmRenders(c.messages) : c.messages;
    const text = templates[c.template].render(messages, { tools: c.tools, addGenerationPrompt: c.addGenerationPrompt, enableThinking: c.enableThinking });
    if (text !== want.text) throw new Error(`case ${i} (seed ${1000 + i}) renders differently:\nTS: ${JSON.stringify(text)}\nPY: ${JSON.stringify(want.text)}`);
    const ids = tok.encode(text);
    if (JSON.stringify(ids) !== JSON.stringify(want.ids)) throw new Error(`case ${i}: ids differ from transformers'`);
    if (c.tools !== undefined) withTools++;
    if (c.messages.some((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 1)) parallel++;
  }
  // The generator covers what it claims (a change to it that stops producing tools would fail here).
  expect(withTools).toBeGreaterThan(COUNT / 4);
  expect(parallel).toBeGreaterThan(COUNT / 10);
}, 120_000);

it('refuses tools and tool calls on a template that would drop them, and accepts them on Qwen3', () => {
  const chatml = ChatTemplate.fromDir(chatmlModelDir());
  const qwen3 = ChatTemplate.fromDir(QWEN3_DIR);
  expect([chatml.rendersTools, chatml.rendersToolCalls, qwen3.rendersTools, qwen3.rendersToolCalls]).toEqual([false, false, true, true]);
  const user = [{ role: 'user' as const, content: 'hi' }];
  expect(() => chatml.render(user, { tools: [CALC_TOOL] })).toThrow(ChatTemplateError);
  expect(() => chatml.render(user, { tools: [CALC_TOOL] })).toThrow(expect.objectContaining({ kind: 'no-tool-support' }) as Error);
  const call = { type: 'function' as const, function: { name: 'calc', arguments: '{"expression": "1+1"}' } };
  expect(() => chatml.render([...user, { role: 'assistant', content: '', tool_calls: [call] }])).toThrow(expect.objectContaining({ kind: 'no-tool-support' }) as Error);
  expect(chatml.render(user, { tools: [] })).toBe(chatml.render(user));
  expect(qwen3.render(user, { tools: [CALC_TOOL] })).toContain('"name": "calc"');
});

it('names a missing template, an unknown named template and a template that raises', () => {
  expect(() => new ChatTemplate({})).toThrow(expect.objectContaining({ kind: 'no-template' }) as Error);
  const named = { chat_template: [{ name: 'default', template: '{{ messages[0].content }}' }, { name: 'tool_use', template: 'T{{ tools | length }}' }] };
  expect(() => new ChatTemplate(named, 'rag')).toThrow(expect.objectContaining({ kind: 'unknown-template-name' }) as Error);
  // transformers' choice: tool_use when tools are given, default otherwise.
  expect(new ChatTemplate(named).render([{ role: 'user', content: 'u' }])).toBe('u');
  expect(new ChatTemplate(named).render([{ role: 'user', content: 'u' }], { tools: [CALC_TOOL] })).toBe('T1');
  const raising = new ChatTemplate({ chat_template: "{% if messages|length > 1 %}{{ raise_exception('one message only') }}{% endif %}x" });
  expect(() => raising.render([{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }])).toThrow(expect.objectContaining({ kind: 'render', message: expect.stringContaining('one message only') as string }) as Error);
});

it("loads a model directory's tokenizer with its own end-of-turn and pad tokens, special tokens as one id", () => {
  const tok = loadTokenizerDir(QWEN3_DIR);
  expect([tok.eosToken, tok.decode([tok.eosId]), tok.decode([tok.padId])]).toEqual(['<|im_end|>', '<|im_end|>', '<|endoftext|>']);
  expect(tok.vocabSize).toBeGreaterThan(151_000);
  for (const special of ['<|im_start|>', '<think>', '</think>', '<tool_call>', '</tool_call>']) expect(tok.encode(special)).toHaveLength(1);
});

it("renders tool-call arguments as vLLM's server does, refusing what JS cannot print as Python", () => {
  const call = (args: string) => ({ role: 'assistant' as const, content: '', tool_calls: [{ type: 'function' as const, function: { name: 'calc', arguments: args } }] });
  const args = (m: ReturnType<typeof asVllmRenders>[number]) => (m.role === 'assistant' ? m.tool_calls?.[0]?.function.arguments : undefined);
  expect(args(asVllmRenders([call('{"expression": "1+1", "n": 2.5}')])[0]!)).toEqual({ expression: '1+1', n: 2.5 });
  // vLLM coerces what is not a JSON object to {} so the conversation can go on.
  for (const bad of ['{bad', '[1]', '42', '']) expect(args(asVllmRenders([call(bad)])[0]!)).toEqual({});
  expect(asVllmRenders([{ role: 'assistant', content: 'a', tool_calls: [] }])).toEqual([{ role: 'assistant', content: 'a' }]);
  for (const unprintable of ['{"x": 1.0}', '{"x": 1e16}', '{"x": 12345678901234567890}', '{"b": 1, "2": 2}']) {
    expect(() => asVllmRenders([call(unprintable)])).toThrow(expect.objectContaining({ name: 'PyJsonError', kind: 'not-representable' }) as Error);
  }
});
