/**
 * scripts/rl-again.sh's config: a finished main-job run's own config, trained again from its SFT
 * checkpoint with only what --set names changed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRunConfig } from '../../src/config/load';
import { parseRunConfig } from '../../src/config/parse';
import { rlAgainConfig } from '../../scripts/lib/rl-again';
import { problemsOf } from '../helpers/config';

const main = loadRunConfig(path.resolve(__dirname, '../../configs/default.yaml'));

describe('rlAgainConfig', () => {
  it("keeps the run's config but for the checkpoint, no SFT and no SFT baselines, and what --set changes", () => {
    const again = rlAgainConfig(main, 'run-1', [['rl.learningRate', 1e-4]], 'run-1.input.json');
    // As a config file: loadRunConfig's file-level checks (compare.sftBudget) pass.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rl-again-')), 'again.json');
    fs.writeFileSync(file, JSON.stringify(again));
    const loaded = loadRunConfig(file);
    expect(loaded.init).toEqual({ ...main.init, fromRun: 'run-1', step: main.sft.steps });
    expect(loaded.sft).toEqual({ ...main.sft, steps: 0 });
    expect(loaded.compare).toEqual({ ...main.compare, moreSft: false, filteredSft: false });
    expect(loaded.rl).toEqual({ ...main.rl, learningRate: 1e-4 });
    expect(loaded.experiment).toBe(`${main.experiment}-again`);
    const unchanged = (c: typeof main) => ({ ...c, experiment: '', init: {}, sft: {}, compare: {}, rl: {} });
    expect(unchanged(loaded)).toEqual(unchanged(main));
  });

  it('refuses what it cannot train again, naming the field', () => {
    expect(problemsOf(() => rlAgainConfig(parseRunConfig({ ...main, rl: { ...main.rl, steps: 0 } }), 'r', [], 'f'))).toEqual([{ path: 'rl.steps', message: expect.stringMatching(/no RL phase/) }]);
    expect(problemsOf(() => rlAgainConfig(parseRunConfig({ ...main, init: { fromRun: 'older' }, sft: { ...main.sft, steps: 0 } }), 'r', [], 'f'))).toEqual([{ path: 'init.fromRun', message: expect.stringMatching(/older/) }]);
    expect(problemsOf(() => rlAgainConfig(main, 'r', [['rl.learningRate.x', 1]], 'f'))).toEqual([{ path: 'rl.learningRate.x', message: 'learningRate is not an object' }]);
    expect(problemsOf(() => rlAgainConfig(main, 'r', [['rl.noSuchKey', 1]], 'f'))).toEqual([expect.objectContaining({ path: 'rl' })]);
    expect(problemsOf(() => rlAgainConfig(main, 'r', [['rl.learningRate', -1]], 'f'))).toEqual([expect.objectContaining({ path: 'rl.learningRate' })]);
    // --set never writes into the run's own config.
    expect(main).toEqual(loadRunConfig(path.resolve(__dirname, '../../configs/default.yaml')));
  });
});
