/**
 * Orchestration-queue activities that log a training run to MLflow (tracking.mlflow): open its run
 * (checked at the run's start: a tracker that cannot be used refuses the run, naming the key), log
 * its metrics-file lines as points, set its status. Each is idempotent (src/tracking/mlflow-run.ts):
 * the workflow retries them with backoff while training goes on (workflows/training-run/tracker.ts).
 */
import { ApplicationFailure, heartbeat } from '@temporalio/activity';
import { ConfigError } from '../src/config/errors';
import type { RunConfig } from '../src/config/schema';
import type { BlobRef } from '../src/domain/types';
import type { ChildRunInput } from '../src/contracts/tracking';
import type { BlobStore } from '../src/store/blob-store';
import { metricsOfLine, paramsOfConfig, type TrackedLine } from '../src/tracking/mlflow-batch';
import { ArtifactsNotServedError, logArtifacts } from '../src/tracking/mlflow-artifacts';
import { MlflowError } from '../src/tracking/mlflow-client';
import { ensureExperiment, logBatch, openChildRun, openRun, pointsNotLogged, setStatus, type MlflowRunRef, type MlflowRunStatus } from '../src/tracking/mlflow-run';
import { runArtifactFiles, type RunArtifacts } from '../src/tracking/run-artifacts';
import { workflowUiUrl } from '../src/viewer/links';

export interface OpenTrackingInput {
  mlflow: NonNullable<NonNullable<RunConfig['tracking']>['mlflow']>;
  workflowId: string;
  namespace: string;
  /** Workflow time the run started (ms). */
  startTime: number;
  /** The resolved config: the run's parameters. */
  config: RunConfig;
  /** A later execution (continue-as-new, --resume): its tracker was accepted at the start, and a failure now is retried, not a refusal. */
  continued: boolean;
  /** More tags (a planActJob's workflow type and role). */
  tags?: Array<{ key: string; value: string }>;
}

export interface LogTrackingInput {
  run: MlflowRunRef;
  lines: TrackedLine[];
  /** Workflow time (ms) the lines were made: every retry writes the same points. */
  timestamp: number;
}

export interface LogArtifactsInput extends RunArtifacts {
  run: MlflowRunRef;
  /** The curves picture in the blob store (renderCurves put it there). */
  curvesPng?: BlobRef;
}

/**
 * `temporalUiUrl`: the Temporal Web UI the run's tag links to (absent: no link); `store`: the blob
 * store the run's artifacts are read from (the curves picture).
 */
export function createTrackingActivities({ temporalUiUrl, store }: { temporalUiUrl?: string; store?: BlobStore } = {}) {
  return {
    async openTrackingRun(input: OpenTrackingInput): Promise<MlflowRunRef> {
      const ep = { uri: input.mlflow.uri };
      const experiment = await ensureExperiment(ep, input.mlflow.experiment);
      if ('problem' in experiment) {
        const { path, message } = experiment.problem;
        if (input.continued) throw ApplicationFailure.retryable(`${path}: ${message}`, 'TrackerUnavailable');
        const err = new ConfigError('workflow input', [experiment.problem]);
        throw ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
      }
      return failureOf(() =>
        openRun(ep, {
          experimentId: experiment.experimentId,
          workflowId: input.workflowId,
          startTime: input.startTime,
          params: paramsOfConfig(input.config),
          tags: [
            { key: 'seed', value: String(input.config.seed) },
            { key: 'temporal.namespace', value: input.namespace },
            ...(temporalUiUrl ? [{ key: 'temporal.webUi', value: workflowUiUrl(temporalUiUrl, input.namespace, input.workflowId) }] : []),
            { key: 'durable-rl.experiment', value: input.config.experiment },
            ...(input.tags ?? []),
          ],
        }),
      );
    },

    async logTracking(input: LogTrackingInput): Promise<void> {
      const ep = { uri: input.run.uri };
      const metrics = input.lines.flatMap((l) => metricsOfLine(l, input.timestamp));
      await failureOf(async () => {
        // A step redone after a resume keeps the points MLflow holds for it (a retry's are there already).
        const fresh = await pointsNotLogged(ep, input.run, metrics);
        // A heartbeat per request written (a kill test freezes after the first).
        await logBatch(ep, input.run, { metrics: fresh }, (written) => heartbeat({ written }));
      });
    },

    /** A baseline's run, a child of the main run (found or made), with its settings as parameters. */
    async openTrackingChildRun(input: ChildRunInput): Promise<MlflowRunRef> {
      const { parent, baseline, name, startTime, settings } = input;
      return failureOf(() => openChildRun({ uri: parent.uri }, { parent, baseline, name, startTime, params: paramsOfConfig(settings) }));
    },

    /** The run's artifacts (the curves picture, the comparison, where the policy is), each replacing what its path held. */
    async logTrackingArtifacts(input: LogArtifactsInput): Promise<void> {
      const { run, curvesPng, ...artifacts } = input;
      if (curvesPng && !store) throw ApplicationFailure.nonRetryable('logTrackingArtifacts: this worker was made without a blob store to read the curves picture from', 'TrackerRefused');
      const png = curvesPng ? await store!.get(curvesPng) : undefined;
      await failureOf(() => logArtifacts({ uri: run.uri }, run, runArtifactFiles(artifacts, png), (written) => heartbeat({ written })));
    },

    async setTrackingStatus(input: { run: MlflowRunRef; status: MlflowRunStatus; endTime?: number }): Promise<void> {
      await failureOf(() => setStatus({ uri: input.run.uri }, input.run, input.status, input.endTime));
    },
  };
}

/** A refusal no retry changes (a bad request, a deleted run) stops the retries; anything else is retried. */
async function failureOf<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof MlflowError && !err.transient && !err.unauthorized) throw ApplicationFailure.nonRetryable(err.message, 'TrackerRefused');
    if (err instanceof ArtifactsNotServedError) throw ApplicationFailure.nonRetryable(err.message, 'TrackerRefused');
    throw err;
  }
}

export type TrackingActivities = ReturnType<typeof createTrackingActivities>;
