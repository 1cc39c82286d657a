/**
 * trainingRun's start: the config its start accepted (or refused, naming the field: src/config/refusals.ts), the run id
 * claimed for it, the state it resumes, then the SFT dataset and the starting checkpoint (a fresh
 * policy, an earlier run's checkpoint with init.fromRun, or a Hugging Face one with init.fromHf).
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import type { RunConfig, RunConfigInput } from '../../src/config/schema';
import { fingerprint } from '../../src/domain/rng';
import type { BlobRef } from '../../src/domain/types';
import type { RunState, TrainingRunResume } from '../../src/contracts/training-run';
import { activityProxies } from '../activity-proxies';
import { failAsRun } from '../failures';
import { CONFIG_REFUSALS_TABLE, refuseAsRecorded, resolveConfigOrFail } from '../parse-config';
import { Run, type RemotePolicy } from './run';
import { RunTracker } from './tracker';
import { TensorboardLog } from '../tensorboard-log';

/** The run's config resolved and checked, its id claimed and its state loaded (a resume's) or begun. */
export async function startRun(input: RunConfigInput, resume: TrainingRunResume | undefined): Promise<Run> {
  // A later execution (continue-as-new, --resume) carries the config its start accepted.
  const checkedByActivity = patched(CONFIG_REFUSALS_TABLE);
  const check = { consumer: { workflow: 'trainingRun' as const }, ...(resume ? { continued: true } : {}), ...(checkedByActivity ? { allRefusals: true } : {}) };
  const cfg = await resolveConfigOrFail(input, 'workflow input', check);
  if (!checkedByActivity) {
    // Runs recorded before agents played on a synced server refused them (docs/agents.md).
    const agentOnServerRefused = cfg.rollout.kind === 'agent' && cfg.inference.engine === 'openai' && !patched('agent-on-remote-server');
    await refuseAsRecorded(cfg, 'workflow input', { consumer: check.consumer, agentOnServerRefused });
  }
  const remote = remotePolicy(cfg);
  const runId = workflowInfo().workflowId;
  const { records } = activityProxies(cfg.timeouts, cfg.trainer);
  // A resume must run the config the state was made with.
  const configHash = fingerprint(cfg);
  // Blobs are named after the workflow id; a run claims the id for its config first (a re-run of the
  // same config shares them on purpose: finished chunks and steps are reused, not redone).
  if (!resume || 'fromSavedState' in resume) await failAsRun(records.claimRunId({ runId, configHash }));
  const state: RunState = resume && 'fromSavedState' in resume ? await failAsRun(records.loadRunState({ runId })) : (resume ?? { losses: [], evals: [] });
  const run = new Run(cfg, runId, state, remote);
  run.showProgress();
  await startTracking(run, resume);
  await startTensorboard(run, resume);
  return run;
}

/**
 * tracking.mlflow: a new run's MLflow run opened before anything is logged (a tracker that cannot
 * be used refuses the run, naming the key); a later execution goes on in the run its state names,
 * writing again what the last one had not confirmed. Runs without the key schedule nothing new.
 */
async function startTracking(run: Run, resume: TrainingRunResume | undefined): Promise<void> {
  const { cfg, state } = run;
  if (!cfg.tracking?.mlflow || !patched('mlflow-tracking')) return;
  if (state.tracking) {
    run.tracker = new RunTracker(state.tracking.mlflow, state.tracking.unconfirmed);
    delete state.tracking.unconfirmed;
    // Resumed after it stopped: MLflow may hold it as failed or killed.
    if (resume && 'fromSavedState' in resume) run.tracker.running();
    return;
  }
  run.tracker = await failAsRun(RunTracker.open(cfg.tracking.mlflow, cfg, resume !== undefined));
  state.tracking = { mlflow: run.tracker.run };
}

/**
 * tracking.tensorboard: a new run's folder made and checked before anything is logged (one that
 * cannot be written refuses the run, naming tracking.tensorboard.dir); a later execution goes on in
 * the folder its state names, writing again what the last one had not (the writer skips what the file holds).
 */
async function startTensorboard(run: Run, resume: TrainingRunResume | undefined): Promise<void> {
  const { cfg, state } = run;
  if (!cfg.tracking?.tensorboard || !patched('tensorboard-tracking')) return;
  const log = state.tensorboard ? new TensorboardLog(state.tensorboard.runDir, state.tensorboard.unconfirmed) : await failAsRun(TensorboardLog.open(cfg.tracking.tensorboard.dir, resume !== undefined));
  run.tensorboard = log;
  state.tensorboard = { runDir: log.runDir };
}


/**
 * The SFT dataset and the starting checkpoint, each made once (a resumed run has both). Returns
 * the dataset and where the starting policy came from (the result's `backend`).
 */
export async function prepare(run: Run): Promise<{ dataset: BlobRef; backend: string }> {
  const { cfg, runId, state, training } = run;
  const dataset =
    state.dataset ??
    (await run.data.prepareSftDataset({ runId, seed: cfg.seed, task: cfg.task, maxSeq: cfg.model.maxSeq, ...(cfg.horizon ? { horizon: cfg.horizon } : {}) })).ref;
  state.dataset = dataset;
  let backend = 'resumed';
  if (!state.checkpoint) {
    if (cfg.init.fromRun !== undefined) {
      state.checkpoint = await failAsRun(training.checkpointFromRun({
        runId,
        fromRun: cfg.init.fromRun,
        ...(cfg.init.step !== undefined ? { step: cfg.init.step } : {}),
        model: cfg.model,
      }));
      backend = `from run ${cfg.init.fromRun}`;
    } else if (cfg.init.fromHf !== undefined) {
      state.checkpoint = await failAsRun(training.checkpointFromHf({ runId, dir: cfg.init.fromHf, model: cfg.model }));
      backend = `from ${cfg.init.fromHf}`;
    } else {
      const init = await training.initPolicy({ runId, model: cfg.model, seed: cfg.seed });
      state.checkpoint = init.checkpoint;
      backend = init.backend;
    }
  }
  // A run started from another run's checkpoint (init.fromRun) counts on from that checkpoint's step.
  run.progress.totalSteps = (state.rlStart?.step ?? Math.max(cfg.sft.steps, run.checkpoint.step)) + run.rlSteps;
  return { dataset, backend };
}

/**
 * inference.engine openai: the server rollouts generate on, which receives every step's weights
 * (inference.openai.weightSync; a config without it is refused, src/config/refusals.ts).
 */
function remotePolicy(cfg: RunConfig): RemotePolicy | undefined {
  const o = cfg.inference.openai;
  if (cfg.inference.engine !== 'openai' || !o?.weightSync) return undefined;
  return { ref: { baseUrl: o.baseUrl, model: o.model, synced: true }, dir: o.weightSync.dir };
}
