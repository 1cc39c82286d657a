/**
 * The repository's import graph, read from the sources with the TypeScript compiler's own scanner
 * (ts.preProcessFile): relative imports between .ts files, each marked type-only or not.
 * Used by the layout tests (what the workflow bundle includes, upward imports, cycles).
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../src/paths';

export interface ImportEdge {
  from: string;
  to: string;
  /** `import type` / `export type`: erased at compile time, never bundled or loaded. */
  typeOnly: boolean;
}

/** Repository-relative .ts path a relative specifier resolves to, or undefined (packages, assets). */
function resolve(fromFile: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(path.join(REPO_ROOT, fromFile)), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(candidate)) return path.relative(REPO_ROOT, candidate);
  return undefined;
}

/** Import edges out of one file; type-only when every binding it imports is a type. */
export function importsOf(file: string): ImportEdge[] {
  const source = ts.createSourceFile(file, fs.readFileSync(path.join(REPO_ROOT, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const edges: ImportEdge[] = [];
  for (const stmt of source.statements) {
    let spec: string | undefined;
    let typeOnly = false;
    if (ts.isImportDeclaration(stmt) && ts.isStringLiteral(stmt.moduleSpecifier)) {
      spec = stmt.moduleSpecifier.text;
      const clause = stmt.importClause;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined;
      typeOnly = !!clause && (clause.isTypeOnly || (!clause.name && !!named && named.length > 0 && named.every((e) => e.isTypeOnly)));
    } else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && ts.isStringLiteral(stmt.moduleSpecifier)) {
      spec = stmt.moduleSpecifier.text;
      typeOnly = stmt.isTypeOnly;
    }
    const to = spec ? resolve(file, spec) : undefined;
    if (to) edges.push({ from: file, to, typeOnly });
  }
  return edges;
}

/** Every file reachable from the entries through imports that are loaded at run time (not type-only). */
export function runtimeClosure(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...entries];
  while (stack.length > 0) {
    const f = stack.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    for (const e of importsOf(f)) if (!e.typeOnly) stack.push(e.to);
  }
  return seen;
}

/** All .ts files under the given top-level folders. */
export function sourceFiles(folders: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.ts')) out.push(rel);
    }
  };
  folders.forEach(walk);
  return out.sort();
}

/**
 * The layers, lowest first: src/ (pure domain, one folder per capability), then activities/ and
 * workflows/ side by side, then workers/, then the entry points. A file may import its own layer
 * or a lower one, never a higher one.
 */
export function layerOf(file: string): number {
  if (file.startsWith('src/')) return 0;
  if (file.startsWith('activities/') || file.startsWith('workflows/')) return 1;
  if (file.startsWith('workers/')) return 2;
  return 3;
}

/** Activity and workflow definitions both need: queue names, signal/query/update definitions, search attributes. */
export const SHARED_DEFINITIONS = ['workflows/task-queues.ts', 'workflows/messages.ts', 'workflows/search-attributes.ts'];

/** Imports that break the layering, as "from -> to (why)". */
export function layerViolations(edges: readonly ImportEdge[]): string[] {
  const out: string[] = [];
  for (const e of edges) {
    if (layerOf(e.to) > layerOf(e.from)) out.push(`${e.from} -> ${e.to} (upward)`);
    else if (e.from.startsWith('activities/') && e.to.startsWith('workflows/') && !SHARED_DEFINITIONS.includes(e.to)) out.push(`${e.from} -> ${e.to} (activities import workflows' shared definitions only)`);
    else if (e.from.startsWith('workflows/') && e.to.startsWith('activities/') && !e.typeOnly) out.push(`${e.from} -> ${e.to} (workflows import activities as types only)`);
  }
  return out;
}

/** The capability of a file: its folder under src/ (src/model), or its top folder elsewhere. */
export function capabilityOf(file: string): string {
  const parts = file.split('/');
  return parts[0] === 'src' && parts.length > 2 ? `src/${parts[1]}` : (parts[0] as string);
}

/** Strongly connected groups of more than one node (each one a cycle), for any node naming. */
export function cycles(edges: readonly ImportEdge[], node: (file: string) => string = (f) => f): string[][] {
  const adj = new Map<string, Set<string>>();
  for (const e of edges) {
    const [a, b] = [node(e.from), node(e.to)];
    if (a === b) continue;
    if (!adj.has(a)) adj.set(a, new Set());
    if (!adj.has(b)) adj.set(b, new Set());
    adj.get(a)!.add(b);
  }
  // Tarjan's algorithm.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of adj.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) found.push(group.sort());
    }
  };
  for (const v of [...adj.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}
