/**
 * After RL: the baselines a skeptic asks for (compare.*: more SFT, SFT on the filtered
 * demonstrations, RFT; workflows/baselines.ts), each from the checkpoint RL started from, then every
 * compared policy once on the test part, and the "SFT only" line. Each saves the run state when
 * done, so a resumed run does none twice.
 */
import type { BlobRef } from '../../src/domain/types';
import type { ComparedPolicy, RlEvalPoint, RunState } from '../../src/contracts/training-run';
import type { WeightsInfo } from '../../src/contracts/weights';
import { FILTERED_SFT_SUFFIX, MORE_SFT_SUFFIX, SFT_ONLY_SUFFIX, rftBaseline, sftBaseline, type RlSpent } from '../baselines';
import { ROLLOUT_KINDS, testPartOf } from '../rollout-kinds';
import { evaluateRl } from './evaluations';
import type { Run } from './run';

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
  const baselineLine = (label: string, e: RlEvalPoint) => run.metrics([{ kind: 'baseline', label, accuracy: e.greedy.accuracy, stderr: e.greedy.stderr }]);
  if (cfg.compare.moreSft && !state.moreSft) {
    progress.phase = 'more-sft';
    state.moreSft = await sftBaseline(cfg, MORE_SFT_SUFFIX, state.rlStart!, dataset, rlSpent(state), evaluateRl(run));
    await baselineLine(`SFT + ${state.moreSft.steps} more SFT steps`, state.moreSft.eval);
    await run.save();
  }
  if (cfg.compare.filteredSft && !state.filteredSft) {
    progress.phase = 'filtered-sft';
    const filtered = await run.data.prepareSftDataset({ runId: `${runId}${FILTERED_SFT_SUFFIX}`, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq, filter: 'tool-using' });
    state.filteredSft = await sftBaseline(cfg, FILTERED_SFT_SUFFIX, state.rlStart!, filtered.ref, rlSpent(state), evaluateRl(run));
    await baselineLine(`SFT + ${state.filteredSft.steps} SFT steps on tool-using demonstrations`, state.filteredSft.eval);
    await run.save();
  }
  if (cfg.compare.rft && !state.rft) {
    progress.phase = 'rft';
    state.rft = await rftBaseline(cfg, state.rlStart!, evaluateRl(run), {
      ...(state.rftProgress ? { progress: state.rftProgress } : {}),
      saveProgress: async (p) => {
        state.rftProgress = p;
        await run.save();
      },
      metrics: (line) => run.metrics([{ kind: 'rft', ...line }]),
    });
    delete state.rftProgress;
    await baselineLine(`SFT + ${state.rft.steps} RFT steps`, state.rft.eval);
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
    await run.metrics([{ kind: 'test', policy: name, greedyAccuracy: e.greedy.accuracy, stderr: e.greedy.stderr, ...(e.sampled ? { sampledAccuracy: e.sampled.accuracy } : {}), ...(e.passAtK ? { passAtK: e.passAtK } : {}), ...(e.tools ? { actToolRate: e.tools.actToolRate } : {}) }]);
    await run.save();
  }
}

/** What RL spent, the SFT baselines' budget under rl-wall-time or rl-trained-tokens. */
function rlSpent(state: RunState): RlSpent {
  return { seconds: state.rlSeconds ?? 0, ...(state.rlTrainedTokens !== undefined ? { trainedTokens: state.rlTrainedTokens } : {}) };
}
