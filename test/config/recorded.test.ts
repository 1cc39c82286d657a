/** Configs recorded before a key existed run as the code that recorded them did (docs/versioning.md). */
import { withRecordedDefaults } from '../../src/config/recorded';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfig } from '../../src/config/schema';

/** A complete config as a history recorded it, with the named keys deleted (as older code never wrote them). */
function recordedWithout(cfg: RunConfig, keys: Array<[section: 'tree' | 'horizon', key: string]>): RunConfig {
  const copy = JSON.parse(JSON.stringify(cfg)) as Record<string, Record<string, unknown>>;
  for (const [section, key] of keys) delete copy[section]![key];
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

test("today's defaults are what withRecordedDefaults fills in, so a new config and an old one run alike", () => {
  const cfg = parseRunConfig({ rollout: { kind: 'tree' } });
  expect(withRecordedDefaults(recordedWithout(cfg, [['tree', 'segmentTokens'], ['tree', 'expandFromRoot']])).tree).toEqual(cfg.tree);
});
