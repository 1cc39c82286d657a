/**
 * The main job's tracker (tracking.mlflow), before anything starts: the local default's `mlflow
 * server` started when nothing answers there, then (for a new run) the experiment checked as the
 * run's start will check it, so a URI that does not answer, a token the server refuses or an
 * experiment name it refuses exit 2 naming the key. A resumed run's tracker is not refused: the run
 * logs into it when it answers.
 */
import type { RunConfig } from '../../src/config/schema';
import type { KeyProblem } from '../../src/config/refusals';
import { ensureExperiment, findRun, mlflowRunUrl } from '../../src/tracking/mlflow-run';
import { ensureLocalMlflow } from './mlflow-server';

export interface TrackerCheck {
  uri: string;
  startedHere: boolean;
  pid?: number;
  experimentUrl: string;
  /** The run's page once the workflow has opened it (polled for up to `waitMs`), undefined if it has not. */
  runUrl(workflowId: string, waitMs?: number): Promise<string | undefined>;
}

export async function checkTracker(cfg: RunConfig, why: 'start' | 'resume'): Promise<TrackerCheck | { error: KeyProblem }> {
  const { uri, experiment } = cfg.tracking!.mlflow!;
  let local: Awaited<ReturnType<typeof ensureLocalMlflow>>;
  try {
    local = await ensureLocalMlflow(uri);
  } catch (err) {
    return { error: { path: 'tracking.mlflow.uri', message: `the local MLflow server did not start: ${(err as Error).message}` } };
  }
  const ep = { uri };
  const found = await ensureExperiment(ep, experiment);
  if ('problem' in found && why === 'start') return { error: found.problem };
  const experimentId = 'experimentId' in found ? found.experimentId : undefined;
  const base = uri.replace(/\/+$/, '');
  return {
    uri,
    startedHere: local?.startedHere ?? false,
    ...(local?.pid ? { pid: local.pid } : {}),
    experimentUrl: experimentId ? `${base}/#/experiments/${experimentId}` : base,
    async runUrl(workflowId, waitMs = 60_000) {
      if (!experimentId) return undefined;
      const deadline = Date.now() + waitMs;
      for (;;) {
        const runId = await findRun(ep, experimentId, workflowId).catch(() => undefined);
        if (runId) return mlflowRunUrl({ uri, experimentId, runId });
        if (Date.now() > deadline) return undefined;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    },
  };
}
