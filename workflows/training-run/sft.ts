/**
 * SFT: fit the policy on the demonstrations in checkpointed chunks of sft.stepsPerActivity steps up
 * to sft.steps, evaluating on held-out SFT problems every eval.everySteps and at the end. Every
 * chunk saves the run state, so a terminated run resumes at its last chunk.
 */
import { log, upsertSearchAttributes } from '@temporalio/workflow';
import type { BlobRef } from '../../src/domain/types';
import type { MetricsLine } from '../../src/report/run-metrics';
import { STEP } from '../search-attributes';
import { evaluate, lastEvalHere } from './evaluations';
import type { Run } from './run';

export async function sftPhase(run: Run, dataset: BlobRef): Promise<void> {
  const { cfg, state, progress } = run;
  if (cfg.eval.everySteps > 0 && state.evals.length === 0 && run.checkpoint.step === 0 && cfg.sft.steps > 0) await evaluate(run);

  while (run.checkpoint.step < cfg.sft.steps) {
    progress.phase = 'sft';
    const toStep = Math.min(cfg.sft.steps, run.checkpoint.step + cfg.sft.stepsPerActivity);
    const chunk = await run.training.trainSft({ runId: run.runId, checkpoint: run.checkpoint, dataset, toStep, sft: cfg.sft, seed: cfg.seed });
    const checkpoint = (state.checkpoint = chunk.checkpoint);
    state.losses.push(...chunk.losses);
    Object.assign(progress, { phase: 'sft', step: checkpoint.step, lastLoss: chunk.losses.at(-1)?.loss });
    upsertSearchAttributes([{ key: STEP, value: checkpoint.step }]);
    await run.metrics(chunk.losses.map((l): MetricsLine => ({ kind: 'sft-loss', step: l.step, loss: l.loss })));
    log.info('sft chunk', { step: checkpoint.step, loss: progress.lastLoss, tokensPerSec: chunk.tokensPerSec });

    const evalDue = cfg.eval.everySteps > 0 && Math.floor(toStep / cfg.eval.everySteps) > Math.floor((toStep - chunk.losses.length) / cfg.eval.everySteps);
    if (evalDue && checkpoint.step < cfg.sft.steps) await evaluate(run);
    await run.save();
    await run.maybeContinueAsNew();
  }

  // A run resumed inside its RL phase already evaluated the end of SFT.
  if (run.rlDone() === 0 && !lastEvalHere(run) && (cfg.sft.steps > 0 || run.rlSteps === 0)) await evaluate(run);
}
