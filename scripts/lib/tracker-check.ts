/**
 * The main job's tracker (tracking.mlflow), before anything starts: the local default's `mlflow
 * server` started when nothing answers there, then (for a new run) the experiment checked as the
 * run's start will check it, so a URI that does not answer, a token the server refuses or an
 * experiment name it refuses exit 2 naming the key. A resumed run's tracker is not refused: the run
 * logs into it when it answers.
 */
import type { RunConfig } from '../../src/config/schema';
import type { KeyProblem } from '../../src/config/refusals';
import { ConfigError } from '../../src/config/errors';
import { parseRunConfig } from '../../src/config/parse';
import { ensureExperiment, findRun, mlflowRunUrl } from '../../src/tracking/mlflow-run';
import { ensureLocalMlflow, LOCAL_MLFLOW_URI } from './mlflow-server';

/**
 * `--track`: the config with tracking.mlflow set to the local default (the server the main job
 * starts; the experiment named after the config's). A config that names its own tracker is refused,
 * naming the key: the flag would say one thing and the config another.
 */
export function withLocalTracking(cfg: RunConfig, source: string): RunConfig {
  if (cfg.tracking?.mlflow) {
    throw new ConfigError(`${source} with --track`, [{ path: 'tracking.mlflow', message: `the config already logs to MLflow (${cfg.tracking.mlflow.uri}, experiment '${cfg.tracking.mlflow.experiment}'): drop --track, or the key` }]);
  }
  return parseRunConfig({ ...cfg, tracking: { ...cfg.tracking, mlflow: { uri: LOCAL_MLFLOW_URI, experiment: cfg.experiment } } }, `${source} with --track`);
}

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
