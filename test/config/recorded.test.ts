/** Configs recorded before a key existed run as the code that recorded them did (docs/versioning.md). */
import { asRecordedInWorkflow, withRecordedDefaults } from '../../src/config/recorded';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfig } from '../../src/config/schema';

/** A complete config as a history recorded it, with the named keys deleted (as older code never wrote them). */
function recordedWithout(cfg: RunConfig, keys: Array<[section: string, key: string]>): RunConfig {
  const copy = JSON.parse(JSON.stringify(cfg)) as Record<string, unknown>;
  for (const [section, key] of keys) {
    // section may be nested: 'task.rl'.
    const holder = section.split('.').reduce((o, k) => (o as Record<string, unknown>)[k], copy as unknown) as Record<string, unknown>;
    delete holder[key];
  }
  return copy as unknown as RunConfig;
}

test('tree.segmentTokens and tree.expandFromRoot: no split and the root a candidate', () => {
  const cfg = parseRunConfig({ rollout: { kind: 'tree' }, tree: { segmentTokens: 8, expandFromRoot: false } });
  const old = withRecordedDefaults(recordedWithout(cfg, [['tree', 'segmentTokens'], ['tree', 'expandFromRoot']]));
  expect(old.tree).toMatchObject({ segmentTokens: 0, expandFromRoot: true });
  // A config that has the keys keeps them.
  expect(withRecordedDefaults(cfg).tree).toMatchObject({ segmentTokens: 8, expandFromRoot: false });
});

test('horizon.groupBy: one group per layout', () => {
  const cfg = parseRunConfig({ task: { kind: 'grid' }, rollout: { kind: 'horizon' }, rl: { groupSize: 6 }, horizon: { actionHorizonsPattern: [5, 10, 15], groupBy: 'layout-horizon' } });
  expect(withRecordedDefaults(recordedWithout(cfg, [['horizon', 'groupBy']])).horizon?.groupBy).toBe('layout');
  expect(withRecordedDefaults(cfg).horizon?.groupBy).toBe('layout-horizon');
});

test('task.grid.testLayouts: a grid config recorded before the test part evaluates on the whole held-out split', () => {
  const cfg = parseRunConfig({ task: { kind: 'grid' }, rollout: { kind: 'horizon' } });
  expect(cfg.task.grid?.testLayouts).toBe(100);
  expect(withRecordedDefaults(recordedWithout(cfg, [['task.grid', 'testLayouts']])).task.grid?.testLayouts).toBe(0);
  expect(withRecordedDefaults(cfg).task.grid?.testLayouts).toBe(100);
  expect(asRecordedInWorkflow(cfg).task.grid?.testLayouts).toBe(0);
});

test("today's defaults are what withRecordedDefaults fills in, so a new config and an old one run alike", () => {
  const cfg = parseRunConfig({ rollout: { kind: 'tree' } });
  expect(withRecordedDefaults(recordedWithout(cfg, [['tree', 'segmentTokens'], ['tree', 'expandFromRoot']])).tree).toEqual(cfg.tree);
});

test('issue 24 keys: a config recorded before them splits whole expressions, has no test evaluation or pass@k, and budgets more SFT by RL\'s wall time', () => {
  const cfg = parseRunConfig({ compare: { moreSft: true } });
  expect(cfg.task.split).toBe('subproblem');
  expect(cfg.task.rl.testProblems).toBe(256);
  expect(cfg.compare.sftBudget).toEqual({ sequences: 12_800 });
  const old = withRecordedDefaults(
    recordedWithout(cfg, [['task', 'split'], ['task.rl', 'testProblems'], ['eval', 'passAtK'], ['compare', 'sftBudget'], ['compare', 'rft'], ['compare', 'filteredSft'], ['rl', 'microBatch']]),
  );
  expect(old.task.split).toBe('expression');
  expect(old.task.rl.testProblems).toBe(0);
  expect(old.eval.passAtK).toBe(0);
  expect(old.compare).toEqual({ moreSft: true, filteredSft: false, rft: false, sftBudget: 'rl-wall-time' });
  // A config that has them keeps them; one parsed inside a workflow (the oldest histories) gets the old behaviour.
  expect(withRecordedDefaults(cfg)).toEqual(cfg);
  expect(asRecordedInWorkflow(cfg)).toEqual(old);
});

test('rl.microBatch: a config recorded before it runs 16 rows per pass in the mini-batch\'s order', () => {
  const cfg = parseRunConfig({});
  expect(cfg.rl.microBatch).toEqual({ rows: 16, byLength: true });
  expect(withRecordedDefaults(recordedWithout(cfg, [['rl', 'microBatch']])).rl.microBatch).toEqual({ rows: 16, byLength: false });
  expect(withRecordedDefaults(parseRunConfig({ rl: { microBatch: { rows: 8 } } })).rl.microBatch).toEqual({ rows: 8, byLength: true });
  expect(asRecordedInWorkflow(cfg).rl.microBatch).toEqual({ rows: 16, byLength: false });
});
