/**
 * A planActJob's own policy: the weights it starts from, its held-out evaluations, and the update
 * after each rollout when it trains.
 */
import { log, patched } from '@temporalio/workflow';
import { fingerprint } from '../../src/domain/rng';
import type { JobEvalPoint, JobRolloutResult, JobTrainingStep } from '../../src/contracts/plan-act-job';
import type { SampleSetRef } from '../../src/contracts/sample-set';
import type { CheckpointInfo, WeightsInfo } from '../../src/contracts/weights';
import { failAsRun } from '../failures';
import { updatePolicy } from '../policy-update';
import { policyOf, type Job, type JobPolicy, type JobSetup, type PlanActJobCarry } from './job';

/** The policy a job starts with: carried over, a fresh or earlier run's checkpoint it trains, or weights it only uses. */
export async function startingPolicy(job: JobSetup, carry?: PlanActJobCarry): Promise<JobPolicy> {
  if (carry) return { weights: carry.weights, ...(carry.checkpoint ? { checkpoint: carry.checkpoint } : {}), ...(carry.start ? { start: carry.start } : {}) };
  if (!job.trains) return { weights: await resolveWeights(job) };
  const { input, cfg, self } = job;
  // Checkpoints and weights are named after the workflow id: an id used before with another
  // config or other starting weights fails here, naming the id, instead of training the old policy.
  // Jobs recorded before this check keep the commands they were recorded with.
  if (patched('plan-act-job-claims-run-id')) {
    const configHash = fingerprint({ config: cfg, role: input.role, weightsFromRun: input.weightsFromRun ?? null, fromStep: input.fromStep ?? null });
    await failAsRun(job.activities.records.claimRunId({ runId: self, configHash }));
  }
  const checkpoint = await initialCheckpoint(job);
  const weights = await job.activities.training.publishWeights({ runId: self, checkpoint, version: 0 });
  return { weights, checkpoint, start: checkpoint };
}

/** The checkpoint a training job starts from: an earlier run's latest, or a fresh policy of its own. */
async function initialCheckpoint(job: JobSetup): Promise<CheckpointInfo> {
  const { input, cfg, self, activities } = job;
  if (input.weightsFromRun !== undefined) {
    return activities.training.checkpointFromRun({
      runId: self,
      fromRun: input.weightsFromRun,
      ...(input.fromStep !== undefined ? { step: input.fromStep } : {}),
      model: cfg.model,
    });
  }
  return (await activities.training.initPolicy({ runId: self, model: cfg.model, seed: ownSeed(job) })).checkpoint;
}

/** The weights of a job that does not train: given, a remote server's, an earlier run's, or fresh. */
async function resolveWeights(job: JobSetup): Promise<WeightsInfo> {
  const { input, cfg, self, activities } = job;
  if (input.weights) return input.weights;
  // A remote server's weights are its own: version 0 only labels the samples.
  if (cfg.inference.engine === 'openai') return { version: 0, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'remote' } };
  if (input.weightsFromRun !== undefined) return activities.jobs.resolveRunWeights({ runId: input.weightsFromRun });
  const init = await activities.training.initPolicy({ runId: self, model: cfg.model, seed: ownSeed(job) });
  return activities.training.publishWeights({ runId: self, checkpoint: init.checkpoint, version: 0 });
}

/** A fresh policy of its own: the two jobs of a dual run are different models from the start. */
function ownSeed({ input, cfg }: Pick<JobSetup, 'input' | 'cfg'>): number {
  return cfg.seed + (input.role === 'actor' ? 1 : 0);
}

/**
 * Held-out evaluation of this job's current weights (task.evalProblems problems; the planner job
 * reads its planner accuracy, the actor job its actor accuracy), on the embedded engine.
 */
export async function evaluateOwn(job: Job, afterRollouts: number): Promise<void> {
  const { cfg, weights } = job;
  const report = await job.activities.inference.evaluatePolicy({ runId: job.self, weights, task: cfg.task, rollout: cfg.rollout, seed: cfg.seed, maxNewTokens: cfg.eval.maxNewTokens });
  const point: JobEvalPoint = {
    afterRollouts,
    weightVersion: weights.version,
    // Arithmetic reports always carry both (a grid config is refused at setup).
    plannerAccuracy: report.plannerAccuracy!,
    actorAccuracy: report.actorAccuracy!,
    episodeAccuracy: report.episodeAccuracy,
  };
  job.evals.push(point);
  log.info('job evaluation', { ...point });
}

/**
 * One policy update of this job's policy on this job's own samples of the rollout (the planner's
 * turns, the actor's acts, both in shared mode, the single-agent episodes after a fallback), then
 * the new weights, which this job brings to its next rollout.
 */
export async function trainOn(job: Job, result: JobRolloutResult): Promise<JobTrainingStep | undefined> {
  const sets = (['planner', 'actor', 'single'] as const).map((r) => result.samples[r]).filter((s): s is SampleSetRef => s !== undefined && s.samples > 0);
  const { checkpoint, state, self } = job;
  if (sets.length === 0 || !checkpoint) return undefined;
  state.phase = 'training';
  const update = await updatePolicy(job.activities.training, {
    runId: self,
    checkpoint,
    samples: sets,
    rl: job.cfg.rl,
    resetOptimizer: checkpoint.step === job.start?.step,
    rlStart: job.start!,
  });
  job.checkpoint = state.checkpoint = update.checkpoint;
  job.weights = state.weights = await job.activities.training.publishWeights({ runId: self, checkpoint: update.checkpoint, version: job.weights.version + 1 });
  job.policy = policyOf(job, job.weights);
  return { step: update.checkpoint.step, loss: update.loss, rows: update.rows, clipFraction: update.pgClipFrac, weightVersion: job.weights.version };
}
