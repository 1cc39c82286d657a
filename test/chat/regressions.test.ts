/**
 * One test per multi-turn token bug the issue names, each run both ways: the naive way (re-render the
 * whole history each turn, or re-tokenize text) gives other ids than the engine saw, while
 * TokenConversation keeps them and checkConversation names the difference.
 * (The TS render equals transformers' — test/chat/template-parity — so the naive renders here are
 * what a transformers-based loop would compute.)
 */
import { ChatTemplate, checkConversation, formatHermesToolCalls, loadChatModel, TokenConversation, type ChatMessage, type ChatModel, type ConversationOptions } from '../../src/chat';
import { QWEN3_DIR, chatmlModelDir } from './chat-models';
import { CALC_TOOL } from './random-chats';

let qwen3: ChatModel;
let chatml: ChatModel;
beforeAll(() => {
  qwen3 = loadChatModel(QWEN3_DIR);
  chatml = loadChatModel(chatmlModelDir());
});

/** The engine's answer to a prompt: the model's text as ids, closed by the end-of-turn id. */
function generate(model: ChatModel, text: string): number[] {
  return [...model.tokenizer.encode(text), model.tokenizer.eosId];
}

/** The naive loop: each turn's prompt is the whole history rendered and tokenized again. */
function naivePrompt(conv: TokenConversation, upTo: number): number[] {
  return conv.model.tokenizer.encode(conv.render(conv.messages.slice(0, upTo), true));
}

const startsWith = (a: readonly number[], prefix: readonly number[]) => prefix.every((id, i) => a[i] === id);

/** Plays the turns: model texts answered by the given environment messages; returns each prompt's ids. */
function play(model: ChatModel, initial: ChatMessage[], opts: ConversationOptions, turns: { model: string; env?: ChatMessage[] }[]) {
  const conv = new TokenConversation(model, initial, opts);
  const prompts: number[][] = [];
  const outputs: number[][] = [];
  for (const t of turns) {
    prompts.push(conv.nextPrompt());
    const ids = generate(model, t.model);
    outputs.push(ids);
    conv.addModelTurn(ids);
    if (t.env) conv.addMessages(...t.env);
  }
  return { conv, prompts, outputs };
}

it('verl#2189 / verl#2165: earlier thinking dropped by Qwen3 re-rendering shifts the prefix; kept ids do not shift', () => {
  const { conv, prompts, outputs } = play(qwen3, [{ role: 'user', content: 'What is 6*7?' }], { reasoningParser: 'qwen3' }, [
    { model: '<think>\nsix sevens\n</think>\n\n42', env: [{ role: 'user', content: 'And 6*8?' }] },
    { model: '<think>\none more six\n</think>\n\n48' },
  ]);
  // Token-in/token-out: the second prompt extends the first prompt and the ids the engine returned.
  expect(startsWith(prompts[1]!, [...prompts[0]!, ...outputs[0]!])).toBe(true);
  // Naive: the history re-rendered drops turn 1's <think> block, so the ids the model produced are gone.
  const naive = naivePrompt(conv, 3);
  expect(startsWith(naive, [...prompts[0]!, ...outputs[0]!])).toBe(false);
  expect(qwen3.tokenizer.decode(naive)).not.toContain('six sevens');
  const check = checkConversation(conv);
  expect(check.mismatches.map((m) => m.kind)).toEqual(['thinking-rewrite']);
  expect(check.mismatches[0]!.keptText).toContain('six sevens');
  expect(check.lossMask).toEqual(conv.modelMask); // the model's thinking stays trained as generated
});

it('verl#2165: the naive history (raw text as content next to the parsed reasoning) renders the think block twice; the parsed message renders it once', () => {
  const raw = '<think>\nadd them\n</think>\n\n5';
  const { conv } = play(qwen3, [{ role: 'user', content: '2+3?' }], { reasoningParser: 'qwen3' }, [{ model: raw }]);
  const naive: ChatMessage[] = [{ role: 'user', content: '2+3?' }, { role: 'assistant', content: raw, reasoning_content: '\nadd them\n' }];
  expect(conv.render(naive, false).match(/<think>/g)).toHaveLength(2);
  expect(conv.render(conv.messages, false).match(/<think>/g)).toHaveLength(1);
  expect(checkConversation(conv).mismatches).toEqual([]);
});

it('prime-rl#1334: the empty think block of a non-thinking prompt is dropped on re-render; kept ids keep it, classified', () => {
  const { conv, prompts, outputs } = play(qwen3, [{ role: 'user', content: 'hi' }], { reasoningParser: 'qwen3', enableThinking: false }, [
    { model: 'hello', env: [{ role: 'user', content: 'bye' }] },
    { model: 'goodbye' },
  ]);
  expect(qwen3.tokenizer.decode(prompts[0]!)).toMatch(/<think>\n\n<\/think>\n\n$/);
  expect(startsWith(prompts[1]!, [...prompts[0]!, ...outputs[0]!])).toBe(true);
  expect(startsWith(naivePrompt(conv, 3), prompts[0]!)).toBe(false);
  const check = checkConversation(conv);
  expect(check.mismatches).toEqual([expect.objectContaining({ kind: 'thinking-rewrite', modelIds: 0, keptText: expect.stringContaining('<think>\n\n</think>') as string })]);
});

it('slime#2263: consecutive tool messages appended one at a time get other ids than the full render; one delta for them all does not', () => {
  const calls = [
    { name: 'calc', arguments: { expression: '2+2' } },
    { name: 'calc', arguments: { expression: '3*3' } },
  ];
  const tools: ChatMessage[] = [
    { role: 'tool', tool_call_id: 'call_1_0', name: 'calc', content: '4' },
    { role: 'tool', tool_call_id: 'call_1_1', name: 'calc', content: '9' },
  ];
  const opts: ConversationOptions = { reasoningParser: 'qwen3', tools: [CALC_TOOL] };
  const { conv } = play(qwen3, [{ role: 'user', content: '2+2 and 3*3?' }], opts, [{ model: `<think>\nboth\n</think>\n\n${formatHermesToolCalls(calls)}`, env: tools }, { model: '<think>\nok\n</think>\n\n4 and 9' }]);
  expect(checkConversation(conv).mismatches).toEqual([]);
  // Naive (slime's incremental loop): after each tool message, the re-rendered history's new text is appended.
  const h = conv.messages.slice(0, 2);
  const r0 = conv.render(h, false);
  const r1 = conv.render([...h, tools[0]!], false);
  const r2 = conv.render([...h, ...tools], true);
  expect(r1).toContain('\n4\n</tool_response><|im_end|>\n'); // the first result closes the turn on its own...
  expect(r2.startsWith(r1)).toBe(false); // ...which the render with both results does not
  const naive = qwen3.tokenizer.encode(r0 + r1.slice(r0.length) + r2.slice(r1.length));
  const kept = conv.ids.slice(0, conv.spans[2]!.end);
  expect(naive).not.toEqual(kept);
  expect(qwen3.tokenizer.encode(r2)).toEqual(kept);
});

it('slime#2288: re-templating the history each turn forks the trajectory; kept ids make one linear sequence', () => {
  const call = (e: string) => formatHermesToolCalls([{ name: 'calc', arguments: { expression: e } }]);
  const opts: ConversationOptions = { reasoningParser: 'qwen3', tools: [CALC_TOOL] };
  const { conv, prompts, outputs } = play(qwen3, [{ role: 'user', content: '(2+3)*4?' }], opts, [
    { model: `<think>\nfirst the sum\n</think>\n\nSum first.\n${call('2+3')}`, env: [{ role: 'tool', tool_call_id: 'call_1_0', content: '5' }] },
    { model: `<think>\nnow times 4\n</think>\n\nThen the product.\n${call('5*4')}`, env: [{ role: 'tool', tool_call_id: 'call_2_0', content: '20' }] },
    { model: '<think>\ndone\n</think>\n\n20', env: [{ role: 'user', content: 'And minus 1?' }] },
    { model: '<think>\neasy\n</think>\n\n19' },
  ]);
  // The naive prompt of turn t: the history before the t-th assistant message, rendered again.
  const assistantAt = conv.messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
  let naiveForks = 0;
  let keptForks = 0;
  for (let t = 1; t < prompts.length; t++) {
    if (!startsWith(prompts[t]!, [...prompts[t - 1]!, ...outputs[t - 1]!])) keptForks++;
    if (!startsWith(naivePrompt(conv, assistantAt[t]!), [...naivePrompt(conv, assistantAt[t - 1]!), ...outputs[t - 1]!])) naiveForks++;
  }
  expect(keptForks).toBe(0);
  expect(naiveForks).toBe(3); // turns 2 and 3: the newline Qwen3 adds before a tool call; turn 4: the dropped thinking
  const kinds = checkConversation(conv).mismatches.map((m) => m.kind);
  expect(new Set(kinds)).toEqual(new Set(['thinking-rewrite', 'whitespace-rewrite']));
});

it('rLLM PR#272 / TRL#5224: a text-level history re-tokenizes the model\'s own ids; kept ids stay as sampled', () => {
  const tok = chatml.tokenizer;
  // The model sampled "hello" as two pieces, a split the tokenizer would not choose for the text.
  const sampled = [...tok.encode('hel'), ...tok.encode('lo'), ...tok.encode(' world'), tok.eosId];
  expect(tok.encode('hello world')).not.toEqual(sampled.slice(0, -1));
  const conv = new TokenConversation(chatml, [{ role: 'user', content: 'greet' }]);
  const prompt = conv.nextPrompt();
  conv.addModelTurn(sampled);
  conv.addMessages({ role: 'user', content: 'again' });
  const next = conv.nextPrompt();
  expect(next.slice(prompt.length, prompt.length + sampled.length)).toEqual(sampled);
  // Naive: the history as text, tokenized again: the model's ids are not the ones it sampled.
  const naive = tok.encode(conv.render(conv.messages, true));
  expect(naive.slice(prompt.length, prompt.length + sampled.length)).not.toEqual(sampled);
  const check = checkConversation(conv);
  expect(check.mismatches).toEqual([expect.objectContaining({ kind: 'model-tokenization', keptText: 'hello', expectedText: 'hello' })]);
  expect(check.lossMask).toEqual(conv.modelMask);
});

it('issue 38 (ChatML): a delta without the "\\n" after <|im_end|> misses ids of the full render; the kept delta has it', () => {
  const { conv } = play(chatml, [{ role: 'user', content: 'a' }], {}, [{ model: 'b', env: [{ role: 'user', content: 'c' }] }, { model: 'd' }]);
  expect(checkConversation(conv).mismatches).toEqual([]);
  // verl's subtraction: the new messages' render after the base minus the base's own render.
  const base: ChatMessage[] = [{ role: 'user', content: 'u' }, { role: 'assistant', content: 'a' }];
  const subtracted = conv.render([...base, { role: 'user', content: 'c' }], true).slice(conv.render(base, false).length);
  expect(subtracted.startsWith('<|im_start|>user')).toBe(true); // the "\n" belongs to the base's render, not the delta
  expect(conv.trailingText()).toBe('\n');
});

it('a template that does not end turns with the tokenizer\'s end-of-turn token is refused by name, not guessed', () => {
  const odd: ChatModel = { ...chatml, template: new ChatTemplate({ chat_template: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}' }) };
  const conv = new TokenConversation(odd, [{ role: 'user', content: 'a' }]);
  conv.nextPrompt();
  conv.addModelTurn(generate(odd, 'b'));
  conv.addMessages({ role: 'user', content: 'c' });
  expect(() => conv.nextPrompt()).toThrow(expect.objectContaining({ kind: 'delta-not-found' }) as Error);
  expect(() => conv.addModelTurn([1])).toThrow(expect.objectContaining({ kind: 'no-pending-messages' }) as Error);
});
