/**
 * A model turn's text read as vLLM reads it with `--reasoning-parser qwen3 --tool-call-parser hermes`
 * (vllm/parser/qwen3.py through the engine's non-streaming extract_reasoning, then
 * vllm/tool_parsers/hermes_tool_parser.py's extract_tool_calls, joined as
 * vllm/parser/abstract_parser.py does), plus what vLLM does not say: why a `<tool_call>` block failed.
 * The fixture test/fixtures/chat_parsers.py runs vLLM's own classes on the same strings.
 */
import { pyStrip } from './jinja-python';
import { PyDict, PyFloat, PyInt, pyJsonDumps, pyJsonLoads, type PyValue } from './py-json';

export interface ParsedToolCall {
  name: string;
  /** JSON text, as vLLM returns it: Python's json.dumps(arguments, ensure_ascii=False). */
  arguments: string;
}

export type ToolCallProblemKind = 'bad-json' | 'not-object' | 'no-name' | 'no-arguments' | 'truncated' | 'unknown-tool';

/** One `<tool_call>` block that did not give a usable call; index counts the blocks of the turn. */
export interface ToolCallProblem {
  kind: ToolCallProblemKind;
  index: number;
  /** The block's text between the tags (or to the end, when unclosed). */
  text: string;
  detail: string;
}

export interface ParsedTurn {
  /** vLLM's `reasoning` (`reasoning_content`): null when none. */
  reasoning: string | null;
  /** vLLM's message `content`: null when none. */
  content: string | null;
  /** vLLM's `tool_calls`: all of them, or none at all when any block fails to parse (vLLM's rule). */
  toolCalls: ParsedToolCall[];
  /** Every block that failed, and calls naming a tool not offered (which vLLM still returns). */
  malformed: ToolCallProblem[];
}

export interface ParseOptions {
  /** The server's --reasoning-parser: 'qwen3', or none (all text is content). */
  reasoningParser?: 'qwen3';
  /** The request's enable_thinking (vLLM's qwen3 parser reads everything as content when false); default true. */
  thinking?: boolean;
  /** The offered tool names; undefined: the request had no tools, so vLLM parses no tool calls. */
  tools?: readonly string[];
  /** 'length' marks an unclosed last `<tool_call>` as truncated. */
  finishReason?: 'stop' | 'length' | string;
}

const THINK_START = '<think>';
const THINK_END = '</think>';
/** What opens a Hermes tool call (what the model writes to call a tool). */
export const TOOL_START = '<tool_call>';
/** ChatML turn boundaries: vLLM's qwen3 parser drops them wherever they appear. */
const DROPPED = ['<|im_start|>', '<|im_end|>'];
const TERMINALS = [THINK_START, THINK_END, TOOL_START, ...DROPPED];
const TOOL_CALL_RE = /<tool_call>([\s\S]*?)<\/tool_call>|<tool_call>([\s\S]*)/g;

/** vLLM's qwen3 reasoning split: reasoning until `</think>` (or a `<tool_call>`), then content. */
export function splitReasoning(text: string, thinking: boolean): { reasoning: string | null; content: string | null } {
  if (!thinking) return { reasoning: null, content: text };
  let inReasoning = true;
  let reasoning = '';
  let content = '';
  let i = 0;
  while (i < text.length) {
    const t = TERMINALS.find((x) => text.startsWith(x, i));
    if (t === undefined) {
      const next = text.indexOf('<', i + 1);
      const end = next < 0 ? text.length : next;
      if (inReasoning) reasoning += text.slice(i, end);
      else content += text.slice(i, end);
      i = end;
      continue;
    }
    i += t.length;
    if (t === THINK_END) inReasoning = false; // ends reasoning; a second one in content is dropped too
    else if (t === TOOL_START) {
      inReasoning = false; // a tool call ends reasoning implicitly and stays in the content
      content += t;
    } else if (t === THINK_START && !inReasoning) content += t;
    // <think> inside reasoning and the ChatML boundaries are dropped.
  }
  return { reasoning: reasoning === '' ? null : reasoning, content: content === '' ? null : content };
}

/** One `<tool_call>` body as Hermes2ProToolParser reads it: a call, or why Python raised. */
function readCall(body: string): ParsedToolCall | { kind: ToolCallProblemKind; detail: string } {
  let v: PyValue;
  try {
    v = pyJsonLoads(body);
  } catch (err) {
    return { kind: 'bad-json', detail: (err as Error).message };
  }
  if (!(v instanceof PyDict)) return { kind: 'not-object', detail: 'the tool call is JSON but not an object' };
  const name = v.entries.get('name');
  if (typeof name !== 'string') return { kind: 'no-name', detail: v.entries.has('name') ? '"name" is not a string' : 'no "name"' };
  if (!v.entries.has('arguments')) return { kind: 'no-arguments', detail: 'no "arguments"' };
  return { name, arguments: pyJsonDumps(v.entries.get('arguments')!) };
}

/** The turn as vLLM's server returns it, with each failed or unknown call counted. Never throws on model text. */
export function parseModelTurn(text: string, opts: ParseOptions): ParsedTurn {
  const split = opts.reasoningParser === 'qwen3' ? splitReasoning(text, opts.thinking ?? true) : { reasoning: null, content: text };
  if (opts.tools === undefined) return { ...split, toolCalls: [], malformed: [] };
  const body = split.content ?? '';
  if (!body.includes(TOOL_START)) return { ...split, toolCalls: [], malformed: [] };
  const calls: ParsedToolCall[] = [];
  const malformed: ToolCallProblem[] = [];
  let index = 0;
  for (const m of body.matchAll(TOOL_CALL_RE)) {
    const closed = m[1] !== undefined;
    // Python takes the unclosed group when the closed one is empty: `<tool_call></tool_call>` reads ''.
    const inner = m[1] ? m[1] : (m[2] ?? '');
    const read = readCall(inner);
    if ('name' in read) calls.push(read);
    else malformed.push({ index, text: inner, ...read });
    if (!closed && opts.finishReason === 'length') malformed.push({ kind: 'truncated', index, text: inner, detail: 'the generation hit its length limit inside <tool_call>' });
    if ('name' in read && !opts.tools.includes(read.name)) malformed.push({ kind: 'unknown-tool', index, text: inner, detail: `no tool named ${JSON.stringify(read.name)} was offered` });
    index++;
  }
  if (calls.length < index) return { ...split, toolCalls: [], malformed }; // vLLM: one bad block, no calls at all
  const before = body.slice(0, body.indexOf(TOOL_START));
  // vLLM: content before the first call, None when `content.strip() == ""`.
  return { reasoning: split.reasoning, content: pyStrip(before, 'strip') === '' ? null : before, toolCalls: calls, malformed };
}

/** A JS value as Python would hold it after json.loads (integers as int, others as float). */
function jsToPy(v: unknown): PyValue {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? new PyInt(BigInt(v)) : new PyFloat(v);
  if (Array.isArray(v)) return v.map(jsToPy);
  if (typeof v === 'object') return new PyDict(new Map(Object.entries(v).map(([k, x]) => [k, jsToPy(x)])));
  throw new TypeError(`a tool argument cannot be ${typeof v}`);
}

/**
 * Tool calls written as Qwen3's template writes them (Hermes): `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`,
 * joined by newlines; string arguments verbatim, objects as Python's json.dumps.
 */
export function formatHermesToolCalls(calls: readonly { name: string; arguments: string | Record<string, unknown> }[]): string {
  return calls
    .map((c) => `<tool_call>\n{"name": "${c.name}", "arguments": ${typeof c.arguments === 'string' ? c.arguments : pyJsonDumps(jsToPy(c.arguments))}}\n</tool_call>`)
    .join('\n');
}
