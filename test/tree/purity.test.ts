/**
 * src/tree is imported by workflow code, which Temporal replays: it must not reach Node built-ins,
 * Temporal's worker or client, engines or stores, the clock or Math.random. ESLint checks imports
 * too (eslint.config.mjs); this test also catches the globals, and runs with the unit tests.
 */
import fs from 'node:fs';
import path from 'node:path';

const DIR = path.resolve(__dirname, '../../src/tree');
// segment.ts reads the Plan/Act protocol's text (its parser and strings, themselves pure).
const ALLOWED_OUTSIDE = new Set(['../domain/types', '../domain/rng', '../planact/actor-parser', '../planact/protocol']);

describe('src/tree purity', () => {
  const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.ts'));

  it('imports only its own files, domain types, the seeded rng and the Plan/Act protocol', () => {
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) {
      const text = fs.readFileSync(path.join(DIR, file), 'utf8');
      for (const m of text.matchAll(/from\s+'([^']+)'/g)) {
        const spec = m[1]!;
        if (!(spec.startsWith('./') || ALLOWED_OUTSIDE.has(spec))) throw new Error(`${file} imports ${spec}`);
      }
      expect(text).not.toMatch(/\brequire\(|\bimport\(/);
    }
  });

  it('uses no clock, no Math.random, no timers', () => {
    for (const file of files) {
      const code = fs.readFileSync(path.join(DIR, file), 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      expect({ file, hits: code.match(/Math\.random|Date\.now|new Date\b|performance\.now|setTimeout|setInterval|process\./g) }).toEqual({ file, hits: null });
    }
  });
});
