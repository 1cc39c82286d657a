/** What a run sends MLflow: keys, steps and timestamps from the metrics lines, parameters within MLflow's limits, requests within log-batch's. */
import { MLFLOW_LIMITS, metricsOfLine, mlflowKey, paramsOfConfig, splitBatch } from '../../src/tracking/mlflow-batch';
import { parseRunConfig } from '../../src/config/parse';

it('makes one point per numeric field, keyed by kind, at the line step and the given time', () => {
  expect(metricsOfLine({ kind: 'sft-loss', step: 3, loss: 1.5 }, 1000)).toEqual([{ key: 'sft/loss', value: 1.5, step: 3, timestamp: 1000 }]);
  const rl = metricsOfLine({ kind: 'rl', step: 2, meanReward: 0.5, loss: 0.1, seconds: { rollout: 1, train: 2, publish: 0.5 } }, 7);
  expect(rl.map((m) => [m.key, m.step])).toEqual([['rl/meanReward', 2], ['rl/loss', 2], ['rl/seconds/rollout', 2], ['rl/seconds/train', 2], ['rl/seconds/publish', 2]]);
  expect(metricsOfLine({ kind: 'eval', phase: 'rl', step: 4, greedyAccuracy: 0.25 }, 7)).toEqual([{ key: 'eval/rl/greedyAccuracy', value: 0.25, step: 4, timestamp: 7 }]);
  // Labels and policies go into the key (characters MLflow refuses replaced), arrays are counted from 1.
  expect(metricsOfLine({ kind: 'baseline', label: 'SFT + 400 more SFT steps', accuracy: 0.2 }, 7).map((m) => [m.key, m.step])).toEqual([['baseline/SFT _ 400 more SFT steps/accuracy', 0]]);
  expect(metricsOfLine({ kind: 'test', policy: 'rl', greedyAccuracy: 0.7, stderr: 0.03, passAtK: [0.6, 0.8] }, 7).map((m) => m.key)).toEqual(['test/rl/greedyAccuracy', 'test/rl/stderr', 'test/rl/passAtK/1', 'test/rl/passAtK/2']);
  // A diverged loss (null in the file, NaN in a line) is left out: MLflow's JSON API takes neither.
  expect(metricsOfLine({ kind: 'sft-loss', step: 1, loss: Number.NaN }, 7)).toEqual([]);
});

it('flattens the resolved config into dotted parameters within MLflow\'s key and value limits', () => {
  const params = paramsOfConfig(parseRunConfig({ seed: 3, rl: { learningRate: 3e-5 } }));
  const byKey = new Map(params.map((p) => [p.key, p.value]));
  expect(byKey.get('seed')).toBe('3');
  expect(byKey.get('rl.learningRate')).toBe('0.00003');
  expect(byKey.get('experiment')).toBe('arith');
  expect(params.length).toBeGreaterThan(50);
  expect(new Set(params.map((p) => p.key)).size).toBe(params.length);
  const long = paramsOfConfig({ a: 'x'.repeat(10_000), ['k'.repeat(300)]: 1 });
  expect(long[0]!.value.length).toBe(MLFLOW_LIMITS.paramValue);
  expect(long[0]!.value).toMatch(/…\(cut, 10000 characters\)$/);
  expect(long[1]!.key.length).toBe(MLFLOW_LIMITS.keyLength);
  expect(mlflowKey('a..b/../c:d')).toBe('a.b/./c_d');
});

it('cuts a batch into requests MLflow takes: at most 100 parameters and tags, 1000 metrics each', () => {
  const params = Array.from({ length: 150 }, (_, i) => ({ key: `p${i}`, value: '1' }));
  const tags = [{ key: 't', value: 'v' }];
  const metrics = Array.from({ length: 2500 }, (_, i) => ({ key: 'm', value: i, step: i, timestamp: 0 }));
  const parts = splitBatch({ params, tags, metrics });
  expect(parts.map((p) => [p.params?.length ?? 0, p.tags?.length ?? 0, p.metrics?.length ?? 0])).toEqual([[100, 0, 0], [50, 1, 0], [0, 0, 1000], [0, 0, 1000], [0, 0, 500]]);
});
