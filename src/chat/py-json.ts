/**
 * Python's `json.loads` and `json.dumps(ensure_ascii=False)`, value for value. vLLM's Hermes parser
 * rewrites a tool call's arguments with exactly these two calls, and transformers' `tojson` is the
 * second one: `1.0` stays `1.0`, big integers stay exact and key order is kept, none of which a
 * JS `JSON.parse`/`JSON.stringify` round trip does. Written by hand because no maintained npm package
 * reproduces Python's float repr and its NaN/Infinity literals.
 */

/** A Python int (arbitrary precision) as json.loads gives it. */
export class PyInt {
  constructor(readonly value: bigint) {}
}
/** A Python float: any JSON number with a fraction or an exponent. */
export class PyFloat {
  constructor(readonly value: number) {}
}
/** A Python dict: insertion order kept, a repeated key keeps its first place and its last value. */
export class PyDict {
  constructor(readonly entries: Map<string, PyValue>) {}
}
export type PyValue = null | boolean | string | PyInt | PyFloat | PyValue[] | PyDict;

export class PyJsonError extends Error {
  constructor(
    readonly kind: 'syntax' | 'not-representable',
    message: string,
  ) {
    super(message);
    this.name = 'PyJsonError';
  }
}

const WS = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?/y;
const SHORT_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Python's json.loads(text): a PyValue, or a PyJsonError of kind 'syntax' where Python raises. */
export function pyJsonLoads(text: string): PyValue {
  let i = 0;
  const fail = (what: string): never => {
    throw new PyJsonError('syntax', `${what} at char ${i}`);
  };
  const skipWs = () => {
    while (i < text.length && WS.has(text[i]!)) i++;
  };
  const value = (): PyValue => {
    const c = text[i];
    if (c === '"') return str();
    if (c === '{') return dict();
    if (c === '[') return list();
    for (const [lit, v] of [
      ['null', null],
      ['true', true],
      ['false', false],
      ['NaN', new PyFloat(NaN)],
      ['Infinity', new PyFloat(Infinity)],
      ['-Infinity', new PyFloat(-Infinity)],
    ] as const) {
      if (text.startsWith(lit, i)) {
        i += lit.length;
        return v;
      }
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return fail('Expecting value');
    i += m[0].length;
    return m[1] !== undefined || m[2] !== undefined ? new PyFloat(Number(m[0])) : new PyInt(BigInt(m[0]));
  };
  const str = (): string => {
    i++;
    let out = '';
    for (;;) {
      if (i >= text.length) fail('Unterminated string');
      const c = text[i]!;
      if (c === '"') {
        i++;
        return out;
      }
      if (c.charCodeAt(0) < 0x20) fail('Invalid control character');
      if (c !== '\\') {
        out += c;
        i++;
        continue;
      }
      const e = text[i + 1];
      if (e === 'u') {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('Invalid \\uXXXX escape');
        out += String.fromCharCode(parseInt(hex, 16)); // surrogate pairs join as UTF-16, as Python joins them
        i += 6;
      } else if (e !== undefined && e in SHORT_ESCAPES) {
        out += SHORT_ESCAPES[e];
        i += 2;
      } else fail('Invalid \\escape');
    }
  };
  const dict = (): PyDict => {
    i++;
    const entries = new Map<string, PyValue>();
    skipWs();
    if (text[i] === '}') {
      i++;
      return new PyDict(entries);
    }
    for (;;) {
      skipWs();
      if (text[i] !== '"') fail('Expecting property name enclosed in double quotes');
      const key = str();
      skipWs();
      if (text[i] !== ':') fail("Expecting ':' delimiter");
      i++;
      skipWs();
      entries.set(key, value());
      skipWs();
      if (text[i] === '}') {
        i++;
        return new PyDict(entries);
      }
      if (text[i] !== ',') fail("Expecting ',' delimiter");
      i++;
    }
  };
  const list = (): PyValue[] => {
    i++;
    const out: PyValue[] = [];
    skipWs();
    if (text[i] === ']') {
      i++;
      return out;
    }
    for (;;) {
      skipWs();
      out.push(value());
      skipWs();
      if (text[i] === ']') {
        i++;
        return out;
      }
      if (text[i] !== ',') fail("Expecting ',' delimiter");
      i++;
    }
  };
  skipWs();
  const v = value();
  skipWs();
  if (i !== text.length) fail('Extra data');
  return v;
}

/** Python's repr of a float, which json.dumps writes (1.0, 1e+16, 1e-05, NaN, Infinity). */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // toExponential() with no argument gives the shortest digits that round-trip, as Python's repr does.
  const [mant, exp] = Math.abs(x).toExponential().split('e') as [string, string];
  const digits = mant.replace('.', '');
  const decpt = Number(exp) + 1; // value = 0.<digits> x 10^decpt
  if (decpt > 16 || decpt < -3) {
    const e = decpt - 1;
    const m = digits.length === 1 ? digits : `${digits[0]}.${digits.slice(1)}`;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/** json.dumps's string escaping with ensure_ascii=False (lone surrogates are written as they are). */
export function pyJsonString(s: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
  return `"${s.replace(/[\x00-\x1f\\"]/g, (c) => {
    const short: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
    return short[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  })}"`;
}

/** Python's json.dumps(value, ensure_ascii=False) with its default separators (', ' and ': '). */
export function pyJsonDumps(v: PyValue): string {
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (typeof v === 'string') return pyJsonString(v);
  if (v instanceof PyInt) return v.value.toString();
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (Array.isArray(v)) return `[${v.map(pyJsonDumps).join(', ')}]`;
  return `{${[...v.entries].map(([k, x]) => `${pyJsonString(k)}: ${pyJsonDumps(x)}`).join(', ')}}`;
}

/**
 * A plain JS value that a JS template engine renders exactly as Jinja renders the Python value, or a
 * PyJsonError 'not-representable' naming why not: a float JS would print differently (1.0, 1e+16),
 * an int past 2^53, or an object whose integer-like keys JS would reorder.
 */
export function pyToJs(v: PyValue, where = 'value'): unknown {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (v instanceof PyInt) {
    if (v.value > BigInt(Number.MAX_SAFE_INTEGER) || v.value < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new PyJsonError('not-representable', `${where}: the integer ${v.value} is past 2^53`);
    }
    return Number(v.value);
  }
  if (v instanceof PyFloat) {
    if (pyFloatRepr(v.value) !== JSON.stringify(v.value)) {
      throw new PyJsonError('not-representable', `${where}: the float ${pyFloatRepr(v.value)} would render as ${JSON.stringify(v.value)} in JS`);
    }
    return v.value;
  }
  if (Array.isArray(v)) return v.map((x, k) => pyToJs(x, `${where}[${k}]`));
  const out: Record<string, unknown> = {};
  for (const [k, x] of v.entries) out[k] = pyToJs(x, `${where}.${k}`);
  const keys = [...v.entries.keys()];
  if (Object.keys(out).some((k, n) => k !== keys[n])) {
    throw new PyJsonError('not-representable', `${where}: JS would reorder the integer-like keys of ${JSON.stringify(keys)}`);
  }
  return out;
}
