/**
 * ESLint's workflow rules (no Node built-ins, engines, stores, wall clock or Math.random) must cover
 * every file the workflow bundle loads: a file the bundle reaches through a value import runs inside
 * the replayed sandbox, whatever folder it sits in.
 */
import { execFileSync } from 'node:child_process';
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
