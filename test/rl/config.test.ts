/** The RL config keys: verl's defaults, and invalid combinations rejected by field name. */
import { ConfigError } from '../../src/config/errors';
import { parseRunConfig } from '../../src/config/parse';
import { pgLossOptions } from '../../src/rl/policy-update';

function problemPaths(raw: unknown): string[] {
  try {
    parseRunConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.map((p) => `${p.path}: ${p.message}`);
  }
  throw new Error('expected a ConfigError');
}

test('defaults are verl’s', () => {
  const rl = parseRunConfig({}).rl;
  expect(rl).toMatchObject({
    clipEps: 0.2,
    normAdvByStd: true,
    advEpsilon: 1e-6,
    dualClipC: 3,
    lossAggMode: 'token-mean',
    ppoEpochs: 1,
    miniBatches: 1,
    gradClip: 1,
    useKlLoss: false,
    klLossCoef: 0.001,
    klLossType: 'low_var_kl',
    useKlInReward: false,
    klRewardCoef: 0.001,
    klPenalty: 'kl',
    entropyCoeff: 0,
  });
  expect(rl.clipEpsLow).toBeUndefined();
  expect(rl.clipEpsHigh).toBeUndefined();
  expect(rl.lossScaleFactor).toBeUndefined();
});

test('the loss options: clip bounds fall back to clipEps, the norm divisor to maxNewTokens, greedy to temperature 1', () => {
  const base = pgLossOptions(parseRunConfig({ rl: { clipEps: 0.3, temperature: 0, lossAggMode: 'seq-mean-token-sum-norm' } }).rl);
  expect(base).toEqual({ clipLow: 0.3, clipHigh: 0.3, dualClipC: 3, aggMode: 'seq-mean-token-sum-norm', lossScaleFactor: 48, temperature: 1, entropyCoeff: 0 });
  const dapo = pgLossOptions(parseRunConfig({ rl: { clipEpsLow: 0.2, clipEpsHigh: 0.28, temperature: 0.7, useKlLoss: true, klLossType: 'k2', klLossCoef: 0.01 } }).rl);
  expect(dapo).toMatchObject({ clipLow: 0.2, clipHigh: 0.28, temperature: 0.7, klLoss: { coef: 0.01, kind: 'k2' } });
});

test('every KL estimator name verl accepts (except full) parses', () => {
  for (const kind of ['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3']) {
    expect(parseRunConfig({ rl: { useKlLoss: true, klLossType: kind, useKlInReward: true, klPenalty: kind } }).rl.klLossType).toBe(kind);
  }
  expect(problemPaths({ rl: { klLossType: 'full' } })[0]).toMatch(/^rl\.klLossType: /);
});

test('invalid values and combinations name the field', () => {
  expect(problemPaths({ rl: { dualClipC: 1 } })).toEqual(['rl.dualClipC: dualClipC must be > 1 (verl clip_ratio_c)']);
  expect(problemPaths({ rl: { promptsPerStep: 2, miniBatches: 3 } })[0]).toMatch(/^rl\.miniBatches: miniBatches must be <= promptsPerStep/);
  expect(problemPaths({ rl: { lossScaleFactor: 100 } })[0]).toMatch(/^rl\.lossScaleFactor: .*seq-mean-token-sum-norm/);
  expect(problemPaths({ rl: { lossAggMode: 'sum' } })[0]).toMatch(/^rl\.lossAggMode: /);
  expect(problemPaths({ rl: { ppoEpochs: 0 } })[0]).toMatch(/^rl\.ppoEpochs: /);
  expect(problemPaths({ rl: { klLossCoef: -1 } })[0]).toMatch(/^rl\.klLossCoef: /);
  expect(problemPaths({ rl: { clipEpsLow: 1.5 } })[0]).toMatch(/^rl\.clipEpsLow: /);
  expect(parseRunConfig({ rl: { lossAggMode: 'seq-mean-token-sum-norm', lossScaleFactor: 100 } }).rl.lossScaleFactor).toBe(100);
});
