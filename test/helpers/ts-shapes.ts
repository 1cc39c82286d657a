/**
 * TypeScript types as JSON shape trees, read with the compiler API from the source, so a test can hold
 * another language's mirror of a contract (python/durable_rl_torch/contracts.py) against the types
 * themselves rather than a hand-kept list. Only this repository's modules and zod are resolved (the
 * contract's types are made of those); everything else is left unresolved, which keeps the program small.
 */
import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../src/paths';

export type Shape =
  | { kind: 'string' | 'number' | 'boolean' | 'any' }
  | { kind: 'literal'; values: Array<string | number | boolean> }
  | { kind: 'array'; of: Shape }
  | { kind: 'record'; of: Shape }
  | { kind: 'object'; fields: Record<string, { optional: boolean; shape: Shape }> };

/** A program over `file` (relative to the repository root) and its checker. */
export function typeProgram(file: string): { checker: ts.TypeChecker; exports: Map<string, ts.Symbol> } {
  const options: ts.CompilerOptions = { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, esModuleInterop: true, skipLibCheck: true, noEmit: true, types: [], lib: ['lib.es2022.d.ts'] };
  const host = ts.createCompilerHost(options);
  host.resolveModuleNameLiterals = (literals, containing, _redirect, opts) =>
    literals.map((l) => (l.text.startsWith('.') || l.text === 'zod' || l.text.startsWith('zod/') ? ts.resolveModuleName(l.text, containing, opts, host) : { resolvedModule: undefined }));
  const full = path.join(REPO_ROOT, file);
  const program = ts.createProgram([full], options, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(full);
  if (!source) throw new Error(`typeProgram: ${file} not found`);
  const exports = new Map(checker.getExportsOfModule(checker.getSymbolAtLocation(source)!).map((s) => [s.name, s] as const));
  return { checker, exports };
}

export function shapeOf(checker: ts.TypeChecker, type: ts.Type, where = 'type', depth = 0): Shape {
  if (depth > 20) throw new Error(`shapeOf: ${where} nests too deep`);
  const t = checker.getNonNullableType(type);
  const f = t.flags;
  if (f & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return { kind: 'any' };
  if (f & ts.TypeFlags.Boolean) return { kind: 'boolean' };
  if (f & ts.TypeFlags.String) return { kind: 'string' };
  if (f & ts.TypeFlags.Number) return { kind: 'number' };
  if (t.isUnion() || t.isLiteral() || f & ts.TypeFlags.BooleanLiteral) {
    const parts = t.isUnion() ? t.types : [t];
    const values = parts.map((p) => {
      if (p.isStringLiteral() || p.isNumberLiteral()) return p.value;
      if (p.flags & ts.TypeFlags.BooleanLiteral) return checker.typeToString(p) === 'true';
      throw new Error(`shapeOf: ${where} is a union of other than literals (${checker.typeToString(t)})`);
    });
    return { kind: 'literal', values: [...new Set(values)].sort((a, b) => String(a).localeCompare(String(b))) };
  }
  if (checker.isArrayType(t) || checker.isTupleType(t)) {
    return { kind: 'array', of: shapeOf(checker, checker.getTypeArguments(t as ts.TypeReference)[0]!, `${where}[]`, depth + 1) };
  }
  // Intersections too: Omit<A, 'k'> & { k: B } is one object.
  if (f & (ts.TypeFlags.Object | ts.TypeFlags.Intersection)) {
    const index = checker.getIndexInfosOfType(t).find((i) => i.keyType.flags & ts.TypeFlags.String);
    if (index) return { kind: 'record', of: shapeOf(checker, index.type, `${where}[key]`, depth + 1) };
    const fields: Record<string, { optional: boolean; shape: Shape }> = {};
    for (const p of checker.getPropertiesOfType(t)) {
      fields[p.name] = { optional: (p.flags & ts.SymbolFlags.Optional) !== 0, shape: shapeOf(checker, checker.getTypeOfSymbol(p), `${where}.${p.name}`, depth + 1) };
    }
    return { kind: 'object', fields };
  }
  throw new Error(`shapeOf: ${where}: unsupported type ${checker.typeToString(t)}`);
}

/**
 * Where `mirror` (another language's parser of the same payload) departs from `truth`: a field it
 * lacks or has extra, one it requires that may be absent, other literal values, another kind. A
 * mirror may leave optional what the truth requires (inputs recorded before the field), and take an
 * object whose fields are all optional and alike (Partial<Record<K, V>>) as a record of V.
 */
export function shapeDifferences(truth: Shape, mirror: Shape, where = 'input'): string[] {
  if (truth.kind === 'object' && mirror.kind === 'record') {
    return Object.entries(truth.fields).flatMap(([k, f]) => (f.optional ? shapeDifferences(f.shape, mirror.of, `${where}.${k}`) : [`${where}.${k} is required in TypeScript but the mirror takes ${where} as a record`]));
  }
  if (truth.kind !== mirror.kind) return [`${where} is ${describe(truth)} in TypeScript but ${describe(mirror)} in the mirror`];
  if (truth.kind === 'literal' && mirror.kind === 'literal') {
    const a = JSON.stringify(truth.values);
    const b = JSON.stringify([...mirror.values].sort((x, y) => String(x).localeCompare(String(y))));
    return a === b ? [] : [`${where} is one of ${a} in TypeScript but ${b} in the mirror`];
  }
  if ((truth.kind === 'array' || truth.kind === 'record') && (mirror.kind === 'array' || mirror.kind === 'record')) {
    return shapeDifferences(truth.of, mirror.of, `${where}${truth.kind === 'array' ? '[]' : '[key]'}`);
  }
  if (truth.kind === 'object' && mirror.kind === 'object') {
    const out: string[] = [];
    for (const [k, f] of Object.entries(truth.fields)) {
      const m = mirror.fields[k];
      if (!m) out.push(`${where}.${k} has no counterpart in the mirror`);
      else {
        if (f.optional && !m.optional) out.push(`${where}.${k} is optional in TypeScript but required by the mirror`);
        out.push(...shapeDifferences(f.shape, m.shape, `${where}.${k}`));
      }
    }
    for (const k of Object.keys(mirror.fields)) if (!(k in truth.fields)) out.push(`${where}.${k} is in the mirror but not in TypeScript`);
    return out;
  }
  return [];
}

/** Where `value` does not fit `shape` (missing or unknown keys, wrong kinds, other literals, numbers that are not finite). */
export function nonConforming(value: unknown, shape: Shape, where = 'value'): string[] {
  switch (shape.kind) {
    case 'any':
      return [];
    case 'string':
    case 'boolean':
      return typeof value === shape.kind ? [] : [`${where} is ${JSON.stringify(value)}, not a ${shape.kind}`];
    case 'number':
      return typeof value === 'number' && Number.isFinite(value) ? [] : [`${where} is ${JSON.stringify(value)}, not a finite number`];
    case 'literal':
      return shape.values.includes(value as string) ? [] : [`${where} is ${JSON.stringify(value)}, not one of ${JSON.stringify(shape.values)}`];
    case 'array':
      return Array.isArray(value) ? value.flatMap((v, i) => nonConforming(v, shape.of, `${where}[${i}]`)) : [`${where} is not an array`];
    case 'record':
      return isPlainObject(value) ? Object.entries(value).flatMap(([k, v]) => nonConforming(v, shape.of, `${where}.${k}`)) : [`${where} is not an object`];
    case 'object': {
      if (!isPlainObject(value)) return [`${where} is not an object`];
      const out = Object.keys(value).filter((k) => !(k in shape.fields)).map((k) => `${where}.${k} is not in the type`);
      for (const [k, f] of Object.entries(shape.fields)) {
        if (value[k] === undefined) {
          if (!f.optional) out.push(`${where}.${k} is missing`);
        } else out.push(...nonConforming(value[k], f.shape, `${where}.${k}`));
      }
      return out;
    }
  }
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

function describe(s: Shape): string {
  return s.kind === 'literal' ? `one of ${JSON.stringify(s.values)}` : s.kind === 'object' ? 'an object' : s.kind === 'any' ? 'anything (unchecked)' : `a ${s.kind}`;
}
