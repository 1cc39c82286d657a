/**
 * Where @huggingface/jinja 0.5.11 departs from Python's Jinja on what chat templates use, made
 * Python's: its `str.strip/lstrip/rstrip` ignore their argument and trim JS whitespace, so Qwen3's
 * `reasoning_content.strip('\n')` also ate a trailing space (found by test/chat/template-parity).
 * The parsed template's calls of those methods are rewritten to a global with Python's semantics.
 */
import { Template } from '@huggingface/jinja';

const STRIP_METHODS = new Set(['strip', 'lstrip', 'rstrip']);
const PY_STRIP = '__durable_rl_py_strip';
/** Python's str.isspace() characters: what strip() with no argument removes. */
const PY_WHITESPACE = '\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';

interface Node {
  type?: string;
  [key: string]: unknown;
}

/** Python's str.strip / lstrip / rstrip (chars: None or a set of characters). */
export function pyStrip(s: unknown, method: string, chars?: unknown): string {
  if (typeof s !== 'string') throw new Error(`${method}() called on a ${typeof s}, not a string`);
  const set = typeof chars === 'string' ? chars : PY_WHITESPACE;
  let start = 0;
  let end = s.length;
  if (method !== 'rstrip') while (start < end && set.includes(s[start]!)) start++;
  if (method !== 'lstrip') while (end > start && set.includes(s[end - 1]!)) end--;
  return s.slice(start, end);
}

/** Variables every render must carry for the rewritten calls. */
export const PYTHON_GLOBALS: Record<string, unknown> = { [PY_STRIP]: pyStrip };

/** Parses a template and rewrites `x.strip(...)`-style calls to Python's semantics. */
export function compileTemplate(source: string): Template {
  const template = new Template(source);
  rewrite(template.parsed as unknown as Node);
  return template;
}

function rewrite(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) rewrite(n);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const n = node as Node;
  for (const v of Object.values(n)) rewrite(v);
  const callee = n.callee as Node | undefined;
  if (n.type !== 'CallExpression' || callee?.type !== 'MemberExpression' || callee.computed) return;
  const property = callee.property as Node;
  if (property.type !== 'Identifier' || !STRIP_METHODS.has(property.value as string)) return;
  n.args = [callee.object, { type: 'StringLiteral', value: property.value }, ...(n.args as unknown[])];
  n.callee = { type: 'Identifier', value: PY_STRIP };
}
