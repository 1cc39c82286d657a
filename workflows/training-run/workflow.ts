/**
 * trainingRun: the main job, an ordered sequence of phases, each in a file of its own here.
 *  1. start.ts: the config (refused naming the field), the run id claimed, the state resumed; the
 *     SFT dataset and the starting checkpoint (init.fromRun, init.fromHf or a fresh policy).
 *  2. sft.ts: SFT in checkpointed chunks, evaluated on held-out SFT problems (evaluations.ts).
 *  3. rl-loop.ts (rl.steps > 0): per step publish, the rollout kind's rollout (step-rollouts.ts,
 *     workflows/rollout-kinds.ts), a GRPO update and the step's record (step-record.ts); one loop on
 *     a synchronous or an asynchronous schedule (rl-schedules.ts); RL evaluations along the way.
 *  4. baselines-and-test.ts: the compare.* baselines, then every compared policy on the test part.
 *  5. The SFT distribution once more, the curves picture, and the result (result.ts).
 * Every SFT chunk and RL step saves the run state (run.ts), so a terminated run resumes where it was
 * (`bash scripts/main.sh --resume <workflow id>`); long runs continue-as-new with their state.
 * The phases' commands are in the order trainingRun always had: recorded histories replay unchanged.
 */
import { CancellationScope, ContinueAsNew, isCancellation, patched } from '@temporalio/workflow';
import type { RunConfigInput } from '../../src/config/schema';
import type { RunState, TrainingRunResult, TrainingRunResume } from '../../src/contracts/training-run';
import { baselinesAndTest } from './baselines-and-test';
import { evaluate, lastEvalHere } from './evaluations';
import { runResult } from './result';
import { rlPhase } from './rl-loop';
import { trimState, type Run } from './run';
import { sftPhase } from './sft';
import { prepare, startRun } from './start';
import { trainingRunV1 } from './v1';

export async function trainingRun(input: RunConfigInput, resume?: TrainingRunResume): Promise<TrainingRunResult> {
  // Runs started before the RL phase keep the commands they were recorded with (docs/versioning.md).
  if (!patched('training-run-v2')) return trainingRunV1(input, resume as RunState | undefined);
  const run = await startRun(input, resume);
  try {
    const result = await phases(run);
    await run.tracker?.finish('FINISHED');
    await run.tensorboard?.finish();
    return result;
  } catch (err) {
    // The MLflow run's status follows the workflow's (a continue-as-new goes on in the same run).
    if (run.tracker && !(err instanceof ContinueAsNew)) {
      const status = isCancellation(err) ? 'KILLED' : 'FAILED';
      await CancellationScope.nonCancellable(() => run.tracker!.finish(status));
    }
    if (run.tensorboard && !(err instanceof ContinueAsNew)) await CancellationScope.nonCancellable(() => run.tensorboard!.finish());
    throw err;
  }
}

/** The phases in order, then the result. */
async function phases(run: Run): Promise<TrainingRunResult> {
  const { dataset, backend } = await prepare(run);
  await sftPhase(run, dataset);
  await rlPhase(run);
  await baselinesAndTest(run, dataset);
  // The SFT distribution once more at the end: did RL keep what SFT taught?
  const final = lastEvalHere(run) ?? (await evaluate(run));
  trimState(run.state);
  run.progress.phase = 'report';
  const report = await run.records.renderCurves({ runId: run.runId, title: `${run.cfg.experiment} (${run.runId})` });
  run.progress.phase = 'done';
  const result = runResult(run, { final, backend, report });
  // tracking.mlflow: the curves, the comparison and where the policy is, as the MLflow run's artifacts.
  run.tracker?.artifacts(result, report.pngRef);
  return result;
}
