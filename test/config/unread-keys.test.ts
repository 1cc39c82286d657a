/**
 * No silent options: keys that only count when a switch is on, or in one of the workflows that take
 * a run config, are refused by name elsewhere (src/config/refusals.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { createConfigActivities } from '../../activities/config';
import { ConfigError } from '../../src/config/errors';
import { loadRunConfig } from '../../src/config/load';
import { parseRunConfig } from '../../src/config/parse';
import { keysPlanActJobIgnores, keysTrainingRunIgnores } from '../../src/config/refusals';
import { REPO_ROOT } from '../../src/paths';
import { evaluationConfig, jobConfig } from '../../scripts/lib/dual-configs';

function refusal(raw: Record<string, unknown>): { path: string; message: string } {
  try {
    parseRunConfig(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toHaveLength(1);
    return (err as ConfigError).problems[0]!;
  }
  throw new Error(`expected ${JSON.stringify(raw)} to be refused`);
}

describe('a key that only counts when a switch is on is refused while it is off', () => {
  it.each([
    [{ rl: { klLossCoef: 0.01 } }, 'rl.klLossCoef', /rl\.useKlLoss/],
    [{ rl: { klLossType: 'mse' } }, 'rl.klLossType', /rl\.useKlLoss/],
    [{ rl: { klRewardCoef: 0.01 } }, 'rl.klRewardCoef', /rl\.useKlInReward/],
    [{ rl: { klPenalty: 'abs' } }, 'rl.klPenalty', /rl\.useKlInReward/],
    [{ rl: { dynamicSampling: { maxBatchesPerStep: 5 } } }, 'rl.dynamicSampling.maxBatchesPerStep', /enabled/],
    [{ rl: { async: { maxStaleness: 0, correction: 'tis' } } }, 'rl.async.correction', /synchronous/],
    [{ rl: { async: { maxStaleness: 1, correction: 'none', isCap: 10 } } }, 'rl.async.isCap', /correction is none/],
    [{ timeline: { merge: false, compareBy: 'token' } }, 'timeline.compareBy', /timeline\.merge is false/],
    [{ timeline: { merge: false, snapDetection: true } }, 'timeline.snapDetection', /timeline\.merge is false/],
    [{ compare: { sftBudget: { sequences: 64 } } }, 'compare.sftBudget', /neither is on/],
    [{ rollout: { kind: 'tree', plannerCredit: 'outcome' }, rl: { groupSize: 4, normAdvByStd: false }, tree: { advantage: 'tree' } }, 'rl.normAdvByStd', /tree\.advantage: tree/],
  ])('%j: %s', (raw, field, why) => {
    const p = refusal(raw);
    expect(p.path).toBe(field);
    expect(p.message).toMatch(why);
  });

  it('takes the same keys with their switch on, and any key at its default', () => {
    expect(parseRunConfig({ rl: { useKlLoss: true, klLossCoef: 0.01, klLossType: 'mse' } }).rl.klLossCoef).toBe(0.01);
    expect(parseRunConfig({ rl: { useKlInReward: true, klRewardCoef: 0.01 } }).rl.klRewardCoef).toBe(0.01);
    expect(parseRunConfig({ rl: { dynamicSampling: { enabled: true, maxBatchesPerStep: 5 } } }).rl.dynamicSampling.maxBatchesPerStep).toBe(5);
    expect(parseRunConfig({ rl: { async: { maxStaleness: 2, correction: 'tis', isCap: 10 } } }).rl.async).toEqual({ maxStaleness: 2, correction: 'tis', isCap: 10 });
    expect(parseRunConfig({ timeline: { merge: true, compareBy: 'token' } }).timeline.compareBy).toBe('token');
    expect(parseRunConfig({ compare: { moreSft: true, sftBudget: { sequences: 64 } } }).compare.sftBudget).toEqual({ sequences: 64 });
    expect(parseRunConfig({ rl: { klLossCoef: 0.001, async: { maxStaleness: 0 } }, timeline: { merge: false, compareBy: 'text' } }).rl.klLossCoef).toBe(0.001);
    expect(parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 4, normAdvByStd: false } }).rl.normAdvByStd).toBe(false);
  });

  it('the plan reward keys of the grid world need horizon.usePlanReward', () => {
    const grid = { task: { kind: 'grid' }, rollout: { kind: 'horizon' } };
    expect(refusal({ ...grid, horizon: { planRewardCoef: 0.5 } }).path).toBe('horizon.planRewardCoef');
    expect(parseRunConfig({ ...grid, horizon: { usePlanReward: true, planRewardCoef: 0.5 } }).horizon?.planRewardCoef).toBe(0.5);
  });

  it("entropy-weighted branch points need the embedded engine's entropy; an outside agent's temperature is the gateway's", () => {
    const openai = { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'policy' } };
    expect(refusal({ rollout: { kind: 'tree' }, rl: { groupSize: 4 }, inference: openai }).path).toBe('tree.nodeSampling');
    expect(parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 4 }, tree: { nodeSampling: 'random' }, inference: openai }).tree.nodeSampling).toBe('random');
    expect(refusal({ rollout: { kind: 'agent' }, rl: { temperature: 3 } }).path).toBe('rl.temperature');
    expect(parseRunConfig({ rollout: { kind: 'plan-act' }, rl: { temperature: 3 } }).rl.temperature).toBe(3);
  });
});

describe('each workflow refuses the keys only another one reads', () => {
  it("trainingRun: a planActJob's rollout timeouts and fallback", () => {
    expect(keysTrainingRunIgnores(parseRunConfig({}))).toEqual([]);
    const problems = keysTrainingRunIgnores(parseRunConfig({ rollout: { rolloutTimeoutSec: 60, fallbackOnTimeout: false } }));
    expect(problems.map((p) => p.path)).toEqual(['rollout.rolloutTimeoutSec', 'rollout.fallbackOnTimeout']);
    expect(problems[0]!.message).toMatch(/planActJob/);
  });

  it("planActJob: SFT, trainingRun's evaluations and test split, asynchronous RL, init.fromHf; a shared job's barrier", () => {
    const job = (raw: Record<string, unknown>, role: 'planner' | 'actor' | 'shared' = 'planner') => keysPlanActJobIgnores(parseRunConfig({ rollout: { mode: role === 'shared' ? 'shared' : 'dual' }, ...raw }), role).map((p) => p.path);
    expect(job({})).toEqual([]);
    expect(job({ rl: { async: { maxStaleness: 1 } } })).toEqual(['rl.async.maxStaleness']);
    expect(job({ init: { fromHf: 'some/dir' } })).toEqual(['init.fromHf']);
    expect(job({ sft: { steps: 10 }, task: { trainProblems: 100, rl: { evalProblems: 8, testProblems: 8 } } })).toEqual(['sft', 'task.trainProblems', 'task.rl.evalProblems', 'task.rl.testProblems']);
    expect(job({ eval: { everySteps: 5, sampled: false, passAtK: 2, rlEverySteps: 3, maxNewTokens: 20 } })).toEqual(['eval.everySteps', 'eval.sampled', 'eval.passAtK']);
    expect(job({ rollout: { mode: 'dual', barrierTimeoutSec: 60 } })).toEqual([]);
    expect(job({ rollout: { mode: 'shared', barrierTimeoutSec: 60, rolloutTimeoutSec: 60 } }, 'shared')).toEqual(['rollout.barrierTimeoutSec']);
    // A job logs to its trackers too (one run per job: docs/tracking.md).
    expect(job({ tracking: { mlflow: { uri: 'http://127.0.0.1:5000', experiment: 'x' }, tensorboard: { dir: 'tb' } } })).toEqual([]);
  });

  it('tracking: an http(s) MLflow URI and an experiment name, or a TensorBoard folder, and no key the run does not read', () => {
    const tracking = (t: unknown) => ({ tracking: t });
    expect(parseRunConfig(tracking({ mlflow: { uri: 'http://127.0.0.1:5000', experiment: 'x' } })).tracking?.mlflow?.experiment).toBe('x');
    expect(parseRunConfig({}).tracking).toBeUndefined();
    expect(refusal(tracking({ mlflow: { uri: 'file:///tmp/mlruns', experiment: 'x' } })).path).toBe('tracking.mlflow.uri');
    expect(refusal(tracking({ mlflow: { uri: 'http://127.0.0.1:5000', experiment: '' } })).path).toBe('tracking.mlflow.experiment');
    expect(refusal(tracking({ mlflow: { uri: 'http://127.0.0.1:5000', experiment: 'x', runName: 'y' } })).path).toBe('tracking.mlflow');
    expect(parseRunConfig(tracking({ tensorboard: { dir: 'tb' } })).tracking).toEqual({ tensorboard: { dir: 'tb' } });
    expect(refusal(tracking({ tensorboard: { dir: '' } })).path).toBe('tracking.tensorboard.dir');
    expect(refusal(tracking({ tensorboard: { dir: 'tb', flushSecs: 5 } })).path).toBe('tracking.tensorboard');
    expect(refusal(tracking({})).path).toBe('tracking');
  });

  it('the example job configs hold no key their jobs would ignore', () => {
    for (const [file, roles] of [['plan-act-shared.yaml', ['shared']], ['plan-act-dual.yaml', ['planner', 'actor']], ['plan-act-dual-rl.yaml', ['planner', 'actor']], ['plan-act-dual-rl-planner.yaml', ['planner', 'actor']]] as const) {
      for (const role of roles) expect([file, role, keysPlanActJobIgnores(loadRunConfig(path.join(REPO_ROOT, 'configs', file)), role)]).toEqual([file, role, []]);
    }
  });

  it("the dual-mode comparison gives its jobs the main job's config without those keys, and its joint evaluation the test split", () => {
    const main = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'configs', 'default.yaml'), 'utf8')) as Record<string, unknown>;
    for (const role of ['planner', 'actor', 'shared'] as const) {
      const cfg = parseRunConfig(jobConfig(main, 'cmp', role, role === 'planner'));
      expect(keysPlanActJobIgnores(cfg, role)).toEqual([]);
      expect(cfg.rollout).toMatchObject({ kind: 'plan-act', mode: role === 'shared' ? 'shared' : 'dual' });
    }
    const tracking = { mlflow: { uri: 'http://127.0.0.1:5000', experiment: 'x' } };
    expect(parseRunConfig(jobConfig({ ...main, tracking }, 'cmp', 'planner', false)).tracking).toEqual(tracking);
    expect(parseRunConfig(evaluationConfig({ ...main, tracking }, 'cmp', 'dual', false)).tracking).toBeUndefined();
    const evaluation = parseRunConfig(evaluationConfig(main, 'cmp', 'dual', false));
    expect(evaluation.task.rl.testProblems).toBe(parseRunConfig(main).task.rl.testProblems);
    expect(evaluation.eval.passAtK).toBe(parseRunConfig(main).eval.passAtK);
  });
});

describe('where the refusals happen: when a run or job starts, not when it goes on', () => {
  const { resolveRunConfig } = createConfigActivities();
  const refused = (p: Promise<unknown>) => expect(p).rejects.toMatchObject({ type: 'ConfigError', nonRetryable: true });

  it("the resolveRunConfig activity refuses the keys its workflow would ignore, and a later execution's carried config is taken as its start took it", async () => {
    const timeouts = { rollout: { rolloutTimeoutSec: 60 } };
    await refused(resolveRunConfig({ config: timeouts, source: 'workflow input', consumer: { workflow: 'trainingRun' } }));
    await refused(resolveRunConfig({ config: { sft: { steps: 5 } }, source: 'planActJob input', consumer: { workflow: 'planActJob', role: 'shared' } }));
    // Without a consumer (inputs recorded before the check, the joint evaluation) only the schema's rules apply.
    expect((await resolveRunConfig({ config: timeouts, source: 'x' })).rollout.rolloutTimeoutSec).toBe(60);
    // A run started before the refusals carries what its start accepted: compare.sftBudget filled
    // for configs recorded before the key, with no SFT baseline on.
    const carried = { compare: { moreSft: false, filteredSft: false, sftBudget: 'rl-wall-time' as const }, ...timeouts };
    await refused(resolveRunConfig({ config: carried, source: 'workflow input', consumer: { workflow: 'trainingRun' } }));
    expect((await resolveRunConfig({ config: carried, source: 'workflow input', consumer: { workflow: 'trainingRun' }, continued: true })).compare.sftBudget).toBe('rl-wall-time');
  });
});
