/**
 * scripts/config-set.ts (the --set of scripts/from-run-seeds.sh): a committed config with settings
 * changed, checked as the main job checks it, or exit 2 naming the field.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRunConfig } from '../../src/config/load';
import { REPO_ROOT } from '../../src/paths';
import { parseSetArgs } from '../../scripts/lib/config-set';

const SCRIPT = path.join(REPO_ROOT, 'dist', 'scripts', 'config-set.js');
const TREE = path.join(REPO_ROOT, 'configs', 'tree-from-run.yaml');
const configSet = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', cwd: REPO_ROOT });

describe('config-set', () => {
  it('changes what --set names and nothing else', () => {
    const r = configSet(TREE, '--set', 'rl.learningRate=0.00003', '--set', 'tree.beamSize=3');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'config-set-')), 'tree.json');
    fs.writeFileSync(file, r.stdout);
    const changed = loadRunConfig(file);
    const committed = loadRunConfig(TREE);
    expect(changed.rl).toEqual({ ...committed.rl, learningRate: 3e-5 });
    expect(changed.tree).toEqual({ ...committed.tree, beamSize: 3 });
    expect({ ...changed, rl: {}, tree: {} }).toEqual({ ...committed, rl: {}, tree: {} });
  });

  it('refuses an invalid setting naming the field, and a malformed command line', () => {
    // The problem lines (after the first line, which names the file and the --set given).
    const problems = (stderr: string) => stderr.split('\n').slice(1).join('\n');
    const bad = configSet(TREE, '--set', 'rl.learningRate=-1');
    expect(bad.status).toBe(2);
    expect(problems(bad.stderr)).toMatch(/rl\.learningRate/);
    expect(bad.stdout).toBe('');
    const unknown = configSet(TREE, '--set', 'rl.noSuchKey=1');
    expect(unknown.status).toBe(2);
    expect(problems(unknown.stderr)).toMatch(/noSuchKey/);
    const malformed = configSet(TREE, '--set', 'rl.learningRate=0.1', '--set', 'rl.learningRate');
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toMatch(/^--set rl\.learningRate: usage/);
    expect(configSet('--set', 'rl.learningRate=1').status).toBe(2);
  });

  it('reads JSON values and keeps other text as strings', () => {
    expect(parseSetArgs(['--set', 'a.b=3', '--set', 'c={"d":true}', '--set', 'e=x=y'])).toEqual({
      sets: [
        ['a.b', 3],
        ['c', { d: true }],
        ['e', 'x=y'],
      ],
    });
    expect(parseSetArgs(['--set', 'a=1', '--sett', 'b=1'])).toEqual({ bad: '--sett b=1' });
    expect(parseSetArgs(['--set', '=1'])).toEqual({ bad: '--set =1' });
  });
});
