/**
 * parseModelTurn reads a model's text as vLLM's server does with `--reasoning-parser qwen3
 * --tool-call-parser hermes`: 1,500 random outputs (thinking on and off, well-formed, malformed,
 * unclosed and parallel tool calls, stray tags, Python-only JSON like 1.0, 1e400, NaN and big ints)
 * give the same reasoning, content and tool calls as vLLM's own parser classes in one Python process.
 * The typed outcomes vLLM does not give (why a call failed, a truncated call, an unknown tool) follow.
 */
import { formatHermesToolCalls, parseModelTurn, type ParseOptions } from '../../src/chat';
import { mulberry32, pick, randInt, type Rng } from '../../src/domain/rng';
import { runPythonPeer, type PyParse } from './chat-models';
import { words } from './random-chats';

const TOOLS = ['calc', 'search'];

function callJson(rng: Rng): string {
  return pick(rng, [
    () => `{"name": "calc", "arguments": {"expression": "${randInt(rng, 0, 9)} * 3"}}`,
    () => `{"name":"search","arguments":{"query":"é 中文","limit":${randInt(rng, 1, 9)}}}`,
    () => `\n{"name": "calc", "arguments": {"x": 1.0, "y": 1e5, "z": 12345678901234567890123, "w": -0.0, "v": 1e-7}}\n`,
    () => `{"name": "calc", "arguments": [NaN, Infinity, 1e400]}`,
    () => `{"name": "nope", "arguments": {}}`,
    () => `{"name": "calc", "arguments": "a string"}`,
    () => `{"name": "calc", "arguments": {"a": 1}, "name": "search"}`,
    () => `{"arguments": {}}`,
    () => `{"name": "calc"}`,
    () => `{"name": 7, "arguments": {}}`,
    () => `["calc"]`,
    () => `{"name": "calc", "arguments": {bad}}`,
    () => `{"name": "calc", "arguments": {"a": 1}`,
    () => ``,
    () => `{"name": "calc", "arguments": {"2": 1, "b": 2, "1": 3}}`,
  ])();
}

function randomOutput(rng: Rng): string {
  const parts: string[] = [];
  const n = randInt(rng, 1, 7);
  for (let i = 0; i < n; i++) {
    parts.push(
      pick(rng, [
        () => words(rng, 4),
        () => '\n',
        () => '\n\n',
        () => ' ',
        () => '<think>',
        () => '</think>',
        () => `<think>\n${words(rng, 3)}\n</think>\n\n`,
        () => `<tool_call>${callJson(rng)}</tool_call>`,
        () => `<tool_call>\n${callJson(rng)}\n</tool_call>`,
        () => `<tool_call>${callJson(rng)}`,
        () => '</tool_call>',
        () => '<|im_end|>',
        () => '<|im_start|>',
        () => '</thi',
        () => '<tool_',
        () => '<function=calc>',
        () => '>',
        () => '<',
      ])(),
    );
  }
  return parts.join('');
}

it('reads 1,500 random model outputs exactly as vLLM qwen3 + hermes do', () => {
  const rng = mulberry32(38);
  const cases: PyParse[] = Array.from({ length: 1500 }, () => ({
    text: randomOutput(rng),
    reasoning_parser: rng() < 0.7 ? ('qwen3' as const) : null,
    thinking: rng() < 0.75,
    tools: rng() < 0.85 ? TOOLS : null,
  }));
  const py = runPythonPeer({ parses: cases });
  let called = 0;
  let reasoned = 0;
  for (const [i, c] of cases.entries()) {
    const opts: ParseOptions = { ...(c.reasoning_parser === null ? {} : { reasoningParser: c.reasoning_parser }), thinking: c.thinking, ...(c.tools === null ? {} : { tools: c.tools }) };
    const mine = parseModelTurn(c.text, opts);
    const want = py.parses[i]!;
    const got = { reasoning: mine.reasoning, content: mine.content, tool_calls: mine.toolCalls };
    if (JSON.stringify(got) !== JSON.stringify(want)) throw new Error(`case ${i} ${JSON.stringify(c)}:\nTS ${JSON.stringify(got)}\nPY ${JSON.stringify(want)}`);
    if (want.tool_calls.length > 0) called++;
    if (want.reasoning !== null) reasoned++;
  }
  expect(called).toBeGreaterThan(100);
  expect(reasoned).toBeGreaterThan(300);
}, 120_000);

const opts: ParseOptions = { reasoningParser: 'qwen3', tools: TOOLS };

it('a malformed tool call is counted with its reason, and vLLM returns no calls for the turn', () => {
  const good = '<tool_call>\n{"name": "calc", "arguments": {"expression": "1+1"}}\n</tool_call>';
  for (const [body, kind] of [
    ['{"name": "calc", "arguments": {bad}}', 'bad-json'],
    ['["calc"]', 'not-object'],
    ['{"arguments": {}}', 'no-name'],
    ['{"name": 3, "arguments": {}}', 'no-name'],
    ['{"name": "calc"}', 'no-arguments'],
  ] as const) {
    const turn = parseModelTurn(`</think>${good}\n<tool_call>${body}</tool_call>`, opts);
    expect(turn.malformed).toEqual([expect.objectContaining({ kind, index: 1, text: body })]);
    // vLLM's rule: one bad block and the turn has no tool calls; its whole text is the content.
    expect(turn.toolCalls).toEqual([]);
    expect(turn.content).toContain('<tool_call>');
  }
});

it('a generation cut inside <tool_call> (finish_reason length) is counted as truncated, never thrown', () => {
  const cut = parseModelTurn('<think>\nok\n</think>\n\n<tool_call>\n{"name": "calc", "argu', { ...opts, finishReason: 'length' });
  expect(cut.malformed.map((m) => m.kind)).toEqual(['bad-json', 'truncated']);
  expect(cut.toolCalls).toEqual([]);
  // Complete JSON before the cut: vLLM still takes the call, and the cut is still counted.
  const complete = parseModelTurn('<tool_call>\n{"name": "calc", "arguments": {}}\n', { ...opts, finishReason: 'length' });
  expect(complete.toolCalls).toEqual([{ name: 'calc', arguments: '{}' }]);
  expect(complete.malformed.map((m) => m.kind)).toEqual(['truncated']);
  // The same text ended by the model (stop) is a call and nothing else.
  expect(parseModelTurn('<tool_call>\n{"name": "calc", "arguments": {}}\n', { ...opts, finishReason: 'stop' }).malformed).toEqual([]);
});

it('a call to a tool that was not offered is returned as vLLM returns it, and counted', () => {
  const turn = parseModelTurn('</think><tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call>', opts);
  expect(turn.toolCalls).toEqual([{ name: 'rm', arguments: '{"path": "/"}' }]);
  expect(turn.malformed).toEqual([expect.objectContaining({ kind: 'unknown-tool', index: 0 })]);
});

it('writes tool calls as Qwen3 renders them, and reads them back', () => {
  const text = formatHermesToolCalls([
    { name: 'calc', arguments: { expression: '2 * (3 + 4)', x: 2.5 } },
    { name: 'search', arguments: '{"query": "é"}' },
  ]);
  expect(text).toBe('<tool_call>\n{"name": "calc", "arguments": {"expression": "2 * (3 + 4)", "x": 2.5}}\n</tool_call>\n<tool_call>\n{"name": "search", "arguments": {"query": "é"}}\n</tool_call>');
  expect(parseModelTurn(`</think>\n\n${text}`, opts).toolCalls).toEqual([
    { name: 'calc', arguments: '{"expression": "2 * (3 + 4)", "x": 2.5}' },
    { name: 'search', arguments: '{"query": "é"}' },
  ]);
});
