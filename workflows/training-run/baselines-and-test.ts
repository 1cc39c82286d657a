/**
 * After RL: the baselines a skeptic asks for (compare.*: more SFT, SFT on the filtered
 * demonstrations, RFT; workflows/baselines.ts), each from the checkpoint RL started from, then every
 * compared policy once on the test part, and the "SFT only" line. Each saves the run state when
 * done, so a resumed run does none twice.
 */
import type { BlobRef } from '../../src/domain/types';
import type { ComparedPolicy, RlEvalPoint, RunState } from '../../src/contracts/training-run';
import type { TrackedBaseline } from '../../src/contracts/tracking';
import type { WeightsInfo } from '../../src/contracts/weights';
import type { MetricsLine } from '../../src/report/run-metrics';
import { FILTERED_SFT_SUFFIX, MORE_SFT_SUFFIX, RFT_SUFFIX, SFT_ONLY_SUFFIX, rftBaseline, sftBaseline, type RlSpent } from '../baselines';
import { ROLLOUT_KINDS, testPartOf } from '../rollout-kinds';
import { evaluateRl } from './evaluations';
import type { Run } from './run';
import type { BaselineRun } from './tracker';

export async function baselinesAndTest(run: Run, dataset: BlobRef): Promise<void> {
  if (run.rlSteps === 0) return;
  await baselines(run, dataset);
  if (testPartOf(run.cfg).size > 0) await testEvaluations(run);
  const start = run.rlEvals[0]!;
  await run.metrics([{ kind: 'baseline', label: 'SFT only', accuracy: start.greedy.accuracy, stderr: start.greedy.stderr }]);
}

/** compare.moreSft, compare.filteredSft and compare.rft, each once. */
async function baselines(run: Run, dataset: BlobRef): Promise<void> {
  const { cfg, state, progress, runId } = run;
  // The baseline's line in the main run; in its child run (tracking.mlflow) also its evaluation at its last step, and its end.
  const baselineLine = (label: string, e: RlEvalPoint, step: number, child?: BaselineRun) => {
    const line: MetricsLine = { kind: 'baseline', label, accuracy: e.greedy.accuracy, stderr: e.greedy.stderr };
    child?.log([line, { kind: 'eval', phase: 'rl', step, greedyAccuracy: e.greedy.accuracy, ...(e.sampled ? { sampledAccuracy: e.sampled.accuracy } : {}) }]);
    child?.end();
    return run.metrics([line]);
  };
  // An SFT baseline's losses, at their SFT steps (after the run's own), go to its child run only: the metrics file never had them.
  const sftLosses = (child?: BaselineRun) => child && ((losses: Array<{ step: number; loss: number }>) => child.log(losses.map((l): MetricsLine => ({ kind: 'sft-loss', ...l }))));
  if (cfg.compare.moreSft && !state.moreSft) {
    progress.phase = 'more-sft';
    const child = trackedBaseline(run, 'moreSft');
    state.moreSft = await sftBaseline(cfg, MORE_SFT_SUFFIX, state.rlStart!, dataset, rlSpent(state), evaluateRl(run), sftLosses(child));
    await baselineLine(`SFT + ${state.moreSft.steps} more SFT steps`, state.moreSft.eval, state.rlStart!.step + state.moreSft.steps, child);
    await run.save();
  }
  if (cfg.compare.filteredSft && !state.filteredSft) {
    progress.phase = 'filtered-sft';
    const filtered = await run.data.prepareSftDataset({ runId: `${runId}${FILTERED_SFT_SUFFIX}`, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq, filter: 'tool-using' });
    const child = trackedBaseline(run, 'filteredSft');
    state.filteredSft = await sftBaseline(cfg, FILTERED_SFT_SUFFIX, state.rlStart!, filtered.ref, rlSpent(state), evaluateRl(run), sftLosses(child));
    await baselineLine(`SFT + ${state.filteredSft.steps} SFT steps on tool-using demonstrations`, state.filteredSft.eval, state.rlStart!.step + state.filteredSft.steps, child);
    await run.save();
  }
  if (cfg.compare.rft && !state.rft) {
    progress.phase = 'rft';
    const child = trackedBaseline(run, 'rft');
    state.rft = await rftBaseline(cfg, state.rlStart!, evaluateRl(run), {
      ...(state.rftProgress ? { progress: state.rftProgress } : {}),
      saveProgress: async (p) => {
        state.rftProgress = p;
        await run.save();
      },
      metrics: (line) => {
        child?.log([{ kind: 'rft', ...line }]);
        return run.metrics([{ kind: 'rft', ...line }]);
      },
    });
    delete state.rftProgress;
    await baselineLine(`SFT + ${state.rft.steps} RFT steps`, state.rft.eval, state.rft.steps, child);
    await run.save();
  }
}

/** Every compared policy once on the kind's test part (testPartOf), each saved as it is done. */
async function testEvaluations(run: Run): Promise<void> {
  const { cfg, state, runId } = run;
  run.progress.phase = 'test';
  const test = (state.test ??= {});
  const rlWeights = await run.publish();
  const fixed = (w: WeightsInfo | undefined) => (w ? () => Promise.resolve(w) : undefined);
  const policies: Array<[ComparedPolicy, (() => Promise<WeightsInfo>) | undefined]> = [
    // The RL start under a key of its own: publishing it as one of the run's versions would move the run's latest weights.
    ['sftOnly', () => run.training.publishWeights({ runId: `${runId}${SFT_ONLY_SUFFIX}`, checkpoint: state.rlStart!, version: 0 })],
    ['rl', fixed(rlWeights)],
    ['moreSft', fixed(state.moreSft?.weights)],
    ['filteredSft', fixed(state.filteredSft?.weights)],
    ['rft', fixed(state.rft?.weights)],
  ];
  const { target } = testPartOf(cfg);
  for (const [name, weightsOf] of policies) {
    if (!weightsOf || test[name]) continue;
    const weights = await weightsOf();
    test[name] = { weightVersion: weights.version, ...(await ROLLOUT_KINDS[cfg.rollout.kind].evaluate(cfg, weights, target)) };
    const e = test[name];
    const line: MetricsLine = { kind: 'test', policy: name, greedyAccuracy: e.greedy.accuracy, stderr: e.greedy.stderr, ...(e.sampled ? { sampledAccuracy: e.sampled.accuracy } : {}), ...(e.passAtK ? { passAtK: e.passAtK } : {}), ...(e.tools ? { actToolRate: e.tools.actToolRate } : {}) };
    // A baseline's test evaluation goes to its child run too.
    if (name === 'moreSft' || name === 'filteredSft' || name === 'rft') trackedBaseline(run, name)?.log([line]);
    await run.metrics([line]);
    await run.save();
  }
}

/** What RL spent, the SFT baselines' budget under rl-wall-time or rl-trained-tokens. */
function rlSpent(state: RunState): RlSpent {
  return { seconds: state.rlSeconds ?? 0, ...(state.rlTrainedTokens !== undefined ? { trainedTokens: state.rlTrainedTokens } : {}) };
}

/**
 * The baseline's child run (tracking.mlflow; none without a tracker or in runs recorded before
 * child runs), named by the baseline's run key, its parameters the settings it trains with.
 */
function trackedBaseline(run: Run, baseline: TrackedBaseline): BaselineRun | undefined {
  if (!run.tracker) return undefined;
  const { cfg, state } = run;
  const suffix = { moreSft: MORE_SFT_SUFFIX, filteredSft: FILTERED_SFT_SUFFIX, rft: RFT_SUFFIX }[baseline];
  const startStep = state.rlStart!.step;
  const settings =
    baseline === 'rft'
      ? { baseline, startStep, rl: cfg.compare.rftLearningRate === undefined ? cfg.rl : { ...cfg.rl, learningRate: cfg.compare.rftLearningRate } }
      : { baseline, startStep, sftBudget: cfg.compare.sftBudget, sft: cfg.sft, demonstrations: baseline === 'filteredSft' ? 'tool-using' : 'all' };
  return run.tracker.baseline(baseline, `${run.runId}${suffix}`, settings);
}
