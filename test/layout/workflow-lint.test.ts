/**
 * ESLint's workflow rules (no Node built-ins, engines, stores, wall clock or Math.random) must cover
 * every file the workflow bundle loads: a file the bundle reaches through a value import runs inside
 * the replayed sandbox, whatever folder it sits in.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';
import { runtimeClosure } from '../helpers/import-graph';

/** The rules ESLint applies to each file, asked of ESLint itself (in a child: jest cannot load its ESM config). */
function ruleNames(files: string[]): Record<string, string[]> {
  const script = `
    const { ESLint } = require('eslint');
    (async () => {
      const eslint = new ESLint({ cwd: process.cwd() });
      const out = {};
      for (const f of JSON.parse(process.argv[1])) out[f] = Object.keys((await eslint.calculateConfigForFile(f)).rules || {});
      process.stdout.write(JSON.stringify(out));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, JSON.stringify(files)], { cwd: REPO_ROOT }).toString('utf8')) as Record<string, string[]>;
}

test('every file the workflow bundle loads is under the workflow lint rules', () => {
  const bundled = [...runtimeClosure(['workflows/index.ts'])].sort();
  expect(bundled.length).toBeGreaterThan(20);
  const rules = ruleNames(bundled);
  expect(bundled.filter((f) => !rules[f]!.includes('no-restricted-properties'))).toEqual([]);
}, 60_000);

test("no module a workflow loads at its start builds the run config's zod schema", () => {
  // Each new workflow runs every module of the bundle again; the schema cost ~25 ms of CPU a
  // workflow (docs/benchmarks.md, "Where the orchestration CPU goes"). Workflow code reaches it only
  // through import() where an old history needs it (workflows/parse-config.ts).
  const bundled = [...runtimeClosure(['workflows/index.ts'])];
  expect(bundled).not.toContain('src/config/schema.ts');
  const withZod = bundled.filter((f) => /from ['"]zod['"]/.test(fs.readFileSync(path.join(REPO_ROOT, f), 'utf8').replace(/import type[^;]*;/g, '')));
  expect(withZod).toEqual([]);
});
