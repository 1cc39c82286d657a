/**
 * trainingRun's step record (workflows/training-run/step-record.ts) and the rollout table's rows it
 * reads: the metrics line is the point's numbers, a valid metrics-file line; a kind's own counts (tree,
 * per-horizon success) and its test part come from its row, not from a branch on the kind.
 */
import type { TrainGrpoOutput } from '../../activities/training';
import { parseRunConfig } from '../../src/config/parse';
import type { RunConfig } from '../../src/config/schema';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { formatMetricsLine } from '../../src/report/run-metrics';
import { parseMetricsJsonl } from '../../src/report/parse-metrics';
import { stepCountsOf, testPartOf } from '../../workflows/rollout-kinds';
import { stepRecord, type StepRecordInput } from '../../workflows/training-run/step-record';

const update = {
  checkpoint: { step: 11, key: 'ckpt' },
  loss: 0.25,
  pgLoss: 0.2,
  pgClipFrac: 0.05,
  pgClipFracLower: 0,
  approxKl: 0.001,
  entropy: 1.5,
  gradNorm: 0.7,
  gradNormLast: 0.6,
  optimizerSteps: 2,
  rows: 4,
  skipped: 1,
  tokens: 120,
  tokensRun: 160,
  meanResponseLength: 30,
  updateSeconds: 3,
  staleness: { '1': 4 },
} as unknown as TrainGrpoOutput;

const summary = (rewards: number[], extra: Partial<RolloutSummary> = {}): RolloutSummary =>
  ({ rows: rewards.map((reward, i) => ({ episodeId: `e${i}`, expression: '1+1', reward, answer: null })), samples: {}, episodes: rewards.length, ...extra }) as unknown as RolloutSummary;

const tree = { nodes: 9, leaves: 6, generatedTokens: 300, duplicates: 1 };
const horizon = [{ horizon: 5, success: 3, total: 4, rate: 0.75, stderr: 0.2 }];

function record(cfg: RunConfig, rollouts: RolloutSummary[], extra: Partial<StepRecordInput> = {}) {
  return stepRecord({ cfg, rlStep: 3, weightVersion: 2, got: { rollouts, keepGroups: [] }, samples: [], update, times: { t0: 0, tSync: 1000, t1: 2000, t2: 5000, t3: 9000 }, remote: false, ...extra });
}

test("the metrics line is the point's numbers, and a valid metrics-file line", () => {
  const { point, line } = record(parseRunConfig({}), [summary([1, 0, 0, 1])], { remote: true, schedule: { maxStaleness: 1, droppedStale: 0, intervals: [{ started: 0, ended: 4000 }] } });
  expect(point).toMatchObject({ step: 3, weightVersion: 2, meanReward: 0.5, accuracy: 0.5, loss: 0.25, rows: 4, skipped: 1, clipFraction: 0.05 });
  expect(point.seconds).toEqual({ publish: 2, rollout: 3, train: 4, sync: 1 });
  expect(point.schedule).toMatchObject({ maxStaleness: 1, staleness: { '1': 4 }, trainerIdle: 3 / 9 });
  expect(point.schedule!.inferenceIdle).toBeCloseTo(5 / 9);
  const parsed = parseMetricsJsonl(formatMetricsLine(line)).rl;
  expect(parsed).toEqual([
    {
      step: 3, meanReward: 0.5, accuracy: 0.5, loss: 0.25, clipFrac: 0.05, approxKl: 0.001, entropy: 1.5, gradNorm: 0.7,
      responseLength: 30, tokensTrained: 120, rows: 4, skipped: 1, seconds: point.seconds, schedule: point.schedule,
    },
  ]);
});

test("a kind's own step counts come from its row of the rollout table", () => {
  const treeCfg = parseRunConfig({ rollout: { kind: 'tree' }, rl: { promptsPerStep: 2, groupSize: 4 }, tree: { beamSize: 3, initialRollouts: [1, 2] } });
  expect(stepCountsOf(treeCfg, [summary([1], { tree })])).toEqual({ tree });
  expect(record(treeCfg, [summary([1], { tree })]).line).toMatchObject({ tree });
  const gridCfg = parseRunConfig({ task: { kind: 'grid' }, rollout: { kind: 'horizon' } });
  expect(record(gridCfg, [summary([1], { horizon })]).point.horizon).toEqual(horizon);
  expect(record(gridCfg, [summary([1], { horizon })]).line).toMatchObject({ horizon: { plan_h5_success_count: 3 } });
  // A kind without a row entry records none, whatever a summary carries.
  expect(stepCountsOf(parseRunConfig({}), [summary([1], { tree })])).toEqual({});
});

test("the test part is the kind's: arithmetic test problems with pass@k, grid test layouts once per horizon", () => {
  const arith = parseRunConfig({ task: { rl: { testProblems: 30 } }, eval: { passAtK: 4 } });
  expect(testPartOf(arith)).toEqual({ size: 30, target: { part: 'test', samplesPerProblem: 4 } });
  expect(testPartOf(parseRunConfig({ task: { rl: { testProblems: 30 } }, eval: { passAtK: 1 } })).target).toEqual({ part: 'test' });
  const grid = parseRunConfig({ task: { kind: 'grid', grid: { testLayouts: 20 } }, rollout: { kind: 'horizon' } });
  expect(testPartOf(grid)).toEqual({ size: 20, target: { part: 'test' } });
});
