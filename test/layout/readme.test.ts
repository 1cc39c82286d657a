/**
 * The README is a manual: at most 300 lines, its layout section names only paths that exist, and its
 * links point at files in the repository.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

/** The paths the layout block names: a line's first word is a folder; file and folder names after it are inside it. */
export function layoutPaths(markdown: string): string[] {
  const start = markdown.indexOf('## Layout');
  const open = markdown.indexOf('```', start);
  const close = markdown.indexOf('```', open + 3);
  if (start < 0 || open < 0 || close < 0) throw new Error('README has no ## Layout section with a code block');
  const out: string[] = [];
  let folder = '';
  for (const line of markdown.slice(open + 3, close).split('\n')) {
    const words = line.match(/[\w./-]+/g) ?? [];
    if (words.length === 0) continue;
    if (!/^\s/.test(line)) {
      folder = words[0]!;
      out.push(folder);
      words.shift();
    }
    for (const w of words) {
      if (!/\.(ts|sh|md|yaml|json)$/.test(w) && !w.endsWith('/')) continue;
      out.push(w.includes('/') && !w.endsWith('/') ? w : path.join(folder, w));
    }
  }
  return out;
}

test('README.md is at most 300 lines', () => {
  expect(readme.split('\n').length).toBeLessThanOrEqual(300);
});

test('every path in the layout section exists', () => {
  const paths = layoutPaths(readme);
  expect(paths.length).toBeGreaterThan(40);
  expect(paths.filter((p) => !fs.existsSync(path.join(REPO_ROOT, p)))).toEqual([]);
});

test('the layout check sees a path that does not exist', () => {
  expect(layoutPaths('## Layout\n```\nsrc/nope/   gone.ts\n```\n')).toEqual(['src/nope/', 'src/nope/gone.ts']);
});

test('every relative link of the README and docs/ points at a file in the repository', () => {
  const docs = fs.readdirSync(path.join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f));
  const broken: string[] = [];
  for (const file of ['README.md', ...docs]) {
    const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
    for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      if (!fs.existsSync(path.join(REPO_ROOT, path.dirname(file), target))) broken.push(`${file}: ${target}`);
    }
  }
  expect(broken).toEqual([]);
});
