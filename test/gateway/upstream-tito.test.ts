/**
 * Token-in/token-out's decisions in the recording proxy (src/gateway/upstream-tito.ts and
 * kept-chats.ts), on the real Qwen3 tokenizer and template and the ChatML one with Hermes tool
 * calls: which requests extend a kept call and which are new conversations, the ids they are sent
 * as, the bound on what is kept, and the refusals of a tokenizer directory it cannot use. The
 * server's side here is the directory's own render (what the first-call check compares with); the
 * real vLLM round trip is test/gateway/upstream-vllm-qwen3.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { asVllmRenders, ChatTemplate, type ChatMessage } from '../../src/chat';
import { loadTokenInTokenOut, type TitoPlan, type TokenInTokenOut } from '../../src/gateway/upstream-tito';
import type { EngineCall, JsonObject } from '../../src/gateway/upstream-tokens';
import type { PromptMessage } from '../../src/timeline/capture';
import { QWEN3_DIR } from '../chat/chat-models';

const CHATML = fs.readFileSync(path.join(__dirname, '..', 'fixtures', 'chatml-tools.jinja'), 'utf8');
const TOOLS = [{ type: 'function', function: { name: 'calc', description: 'Evaluate', parameters: { type: 'object', properties: { expression: { type: 'string' } } } } }];
const SCOPE = { episode: 'e1', agent: 'solver' };
const CALL = { id: 'call_1', type: 'function', function: { name: 'calc', arguments: '{"expression": "12+34"}' } };
const TOOL_TURN = '<tool_call>\n{"name": "calc", "arguments": {"expression": "12+34"}}\n</tool_call><|im_end|>';

let tito: TokenInTokenOut;
beforeEach(() => {
  tito = loadTokenInTokenOut(QWEN3_DIR, 'tokenizerDir');
});

const encode = (text: string) => tito.model.tokenizer.encode(text);

/** The ChatML server's prompt for a body: the template's full render, tokenized. */
function serverPrompt(body: JsonObject): number[] {
  const t = new ChatTemplate({ ...tito.model.template.config, chat_template: CHATML });
  return encode(t.render(asVllmRenders(body.messages as ChatMessage[]), { tools: TOOLS as never, addGenerationPrompt: true }));
}

const body = (messages: unknown[], extra: JsonObject = {}): JsonObject => ({ model: 'm', messages, tools: TOOLS, chat_template: CHATML, ...extra });

/** A call of `b` answered with `turn` (text ending its turn), as the server would answer it: kept, and its plan returned. */
function served(b: JsonObject, turn: string, message: JsonObject, opts: { finishReason?: string; promptIds?: number[]; scope?: typeof SCOPE } = {}): { plan: TitoPlan; call: EngineCall; why: TitoPlan['why'] } {
  const plan = tito.plan(opts.scope ?? SCOPE, b);
  const promptTokenIds = plan.extends?.promptIds ?? opts.promptIds ?? serverPrompt(b);
  const tokenIds = encode(turn);
  const call: EngineCall = { index: 0, promptTokenIds, tokenIds, logprobs: tokenIds.map(() => -1), finishReason: opts.finishReason ?? 'stop', message };
  const prompt: PromptMessage[] = plan.extends ? [...plan.extends.kept, { text: '', tokenIds: plan.extends.delta }] : [{ text: '', tokenIds: promptTokenIds }];
  const why = tito.keep(plan, b, call, prompt, turn, plan.extends !== undefined);
  return { plan, call, why };
}

const user = { role: 'user', content: 'What is 12+34?' };
const asked = { role: 'assistant', content: null, tool_calls: [CALL] };
const result = { role: 'tool', tool_call_id: 'call_1', content: '46' };

test('a request that extends a kept call is sent as its ids and the new messages rendered as a delta: with ChatML exactly the full render', () => {
  const first = served(body([user]), TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] });
  expect(first.why).toBeUndefined();
  expect(first.plan.extends).toBeUndefined();
  const second = body([user, asked, result]);
  const plan = tito.plan(SCOPE, second);
  expect(plan.extends).toBeDefined();
  const kept = [...first.call.promptTokenIds, ...first.call.tokenIds];
  expect(plan.extends!.promptIds.slice(0, kept.length)).toEqual(kept);
  expect(plan.extends!.promptIds).toEqual(serverPrompt(second));
  // A third call extends the second as well.
  served(second, 'It is 46.<|im_end|>', { role: 'assistant', content: 'It is 46.' });
  const third = body([user, asked, result, { role: 'assistant', content: 'It is 46.' }, { role: 'user', content: 'And 7*6?' }]);
  expect(tito.plan(SCOPE, third).extends!.promptIds).toEqual(serverPrompt(third));
});

test('the echo need not be byte-equal: key order, null fields, null and "" content, re-serialized arguments are the same conversation', () => {
  served(body([user]), TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] });
  const echoes = [
    { tool_calls: [{ type: 'function', function: { arguments: '{"expression":"12+34"}', name: 'calc' }, id: 'other' }], content: '', role: 'assistant', refusal: null },
    { role: 'assistant', tool_calls: [{ function: { name: 'calc', arguments: { expression: '12+34' } } }] },
  ];
  for (const echo of echoes) expect(tito.plan(SCOPE, body([{ content: 'What is 12+34?', role: 'user', name: null }, echo, result])).extends).toBeDefined();
});

test('anything that does not extend a kept call is a new conversation: edited messages, another reply, system prompt, tools, template, kwargs, episode or agent', () => {
  served(body([user]), TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] });
  expect(tito.plan(SCOPE, body([user, asked, result])).extends).toBeDefined();
  const other = { ...CALL, function: { name: 'calc', arguments: '{"expression": "12+35"}' } };
  const cases: Array<[string, JsonObject, typeof SCOPE]> = [
    ['edited user message', body([{ role: 'user', content: 'What is 12+35?' }, asked, result]), SCOPE],
    ['other tool call', body([user, { ...asked, tool_calls: [other] }, result]), SCOPE],
    ['other content', body([user, { ...asked, content: 'Let me see.' }, result]), SCOPE],
    ['system prompt', body([{ role: 'system', content: 'Add.' }, user, asked, result]), SCOPE],
    ['other tools', body([user, asked, result], { tools: [TOOLS[0], { type: 'function', function: { name: 'x', parameters: {} } }] }), SCOPE],
    ['template', body([user, asked, result], { chat_template: undefined }), SCOPE],
    ['kwargs', body([user, asked, result], { chat_template_kwargs: { enable_thinking: false } }), SCOPE],
    ['episode', body([user, asked, result]), { ...SCOPE, episode: 'e2' }],
    ['agent', body([user, asked, result]), { ...SCOPE, agent: 'checker' }],
    ['no new message', body([user, asked]), SCOPE],
  ];
  for (const [what, b, scope] of cases) expect([what, tito.plan(scope, b).extends]).toEqual([what, undefined]);
});

test('requests that ask for something else than the next turn, or carry messages it cannot render as the server does, are forwarded and not kept', () => {
  const fields: JsonObject[] = [{ add_generation_prompt: false }, { continue_final_message: true }, { add_special_tokens: true }, { kv_transfer_params: { x: 1 } }];
  for (const f of fields) {
    const plan = tito.plan(SCOPE, body([user], f));
    expect(plan.key).toBeUndefined();
    expect(plan.why?.kind).toBe(`field-${Object.keys(f)[0]}`);
  }
  const parts = tito.plan(SCOPE, body([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]));
  expect(parts.key).toBeUndefined();
  expect(parts.why).toMatchObject({ kind: 'messages', text: expect.stringContaining('messages[0] has content that is not a text') });
  expect(tito.plan(SCOPE, body([{ role: 'developer', content: 'x' }])).why?.text).toContain('messages[0] has role "developer"');
});

test('a first call is kept only if the directory renders its messages to the server\'s ids; a turn must end on the end-of-turn id or the length limit', () => {
  const wrong = served(body([user]), TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] }, { promptIds: [1, 2, 3] });
  expect(wrong.why?.kind).toBe('first-render');
  expect(tito.plan(SCOPE, body([user, asked, result])).extends).toBeUndefined();

  const open = served(body([user]), TOOL_TURN.replace('<|im_end|>', ''), { role: 'assistant', content: null, tool_calls: [CALL] });
  expect(open.why?.kind).toBe('turn-end');
  expect(tito.plan(SCOPE, body([user, asked, result])).extends).toBeUndefined();

  // Cut by the length limit: kept, and the delta closes the turn with the end-of-turn id first.
  const cut = served(body([user]), 'It is', { role: 'assistant', content: 'It is' }, { finishReason: 'length' });
  expect(cut.why).toBeUndefined();
  const plan = tito.plan(SCOPE, body([user, { role: 'assistant', content: 'It is' }, { role: 'user', content: 'Go on.' }]));
  expect(plan.extends!.delta[0]).toBe(tito.model.tokenizer.eosId);
  expect(plan.extends!.promptIds).toEqual([...cut.call.promptTokenIds, ...cut.call.tokenIds, ...plan.extends!.delta]);
});

test('two kept calls of the same messages with the same reply but different ids are ambiguous: a new conversation, never a guess', () => {
  const b = body([user]);
  served(b, TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] });
  expect(tito.plan(SCOPE, body([user, asked, result])).extends).toBeDefined();
  // The same reply from other ids (a server whose reasoning parser took different thinking off, say).
  served(b, `<think>\nhm\n</think>\n\n${TOOL_TURN}`, { role: 'assistant', content: null, tool_calls: [CALL] });
  const plan = tito.plan(SCOPE, body([user, asked, result]));
  expect(plan.extends).toBeUndefined();
  expect(plan.why?.kind).toBe('ambiguous');
});

test('what is kept is bounded: past the budget of ids the least recently used conversations are forgotten', () => {
  tito = loadTokenInTokenOut(QWEN3_DIR, 'tokenizerDir', 1_000);
  const episodes = Array.from({ length: 12 }, (_, i) => ({ ...SCOPE, episode: `e${i}` }));
  for (const scope of episodes) served(body([user]), TOOL_TURN, { role: 'assistant', content: null, tool_calls: [CALL] }, { scope });
  expect(tito.stats.ids).toBeLessThanOrEqual(1_000);
  const extended = episodes.map((scope) => tito.plan(scope, body([user, asked, result])).extends !== undefined);
  expect(extended.slice(0, 4)).toEqual([false, false, false, false]);
  expect(extended.at(-1)).toBe(true);
});

test('a tokenizer directory it cannot use is refused, naming the option and what is wrong', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-tito-'));
  try {
    expect(() => loadTokenInTokenOut(path.join(tmp, 'none'), '--tokenizer-dir')).toThrow(/^--tokenizer-dir ".*none": no such directory; token-in\/token-out needs/);
    fs.symlinkSync(path.join(QWEN3_DIR, 'tokenizer.json'), path.join(tmp, 'tokenizer.json'));
    expect(() => loadTokenInTokenOut(tmp, '--tokenizer-dir')).toThrow(/^--tokenizer-dir ".*": it has no tokenizer_config\.json/);
    const config = JSON.parse(fs.readFileSync(path.join(QWEN3_DIR, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(tmp, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: undefined }));
    expect(() => loadTokenInTokenOut(tmp, '--tokenizer-dir')).toThrow(/^--tokenizer-dir ".*": tokenizer_config\.json has no chat_template/);
    // A template that never ends an assistant turn with the end-of-turn token has no delta to render.
    fs.writeFileSync(path.join(tmp, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}' }));
    expect(() => loadTokenInTokenOut(tmp, '--tokenizer-dir')).toThrow(/^--tokenizer-dir ".*": the template does not end an assistant turn/);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
