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
