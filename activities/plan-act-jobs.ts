/**
 * Orchestration-queue activities a Plan/Act job needs besides inference: its config file, the
 * weights another run published, and its arrival at the rollout session.
 *
 * Arrival is update-with-start through the Temporal client: workflow code cannot start-or-join a
 * workflow by id, and whichever job arrives first must create the session while the second joins
 * it. The update id is fixed per job and session, so an activity retry is deduplicated by the server
 * instead of arriving twice.
 */
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { loadRunConfig } from '../src/config/load';
import type { JobRole } from '../src/config/refusals';
import { asConfigFailure, refuseFor, type ResolveRunConfigInput } from './config';
import type { RunConfig } from '../src/config/schema';
import { readOnnxMetadata } from '../src/model/onnx-export';
import { REPO_ROOT } from '../src/paths';
import type { BlobStore } from '../src/store/blob-store';
import type { Arrival, ArrivalAck, RolloutSessionInput } from '../src/contracts/rollout-session';
import { EXPERIMENT, ROLLOUT_ID } from '../workflows/search-attributes';
import { arriveUpdate } from '../workflows/messages';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { WeightsInfo } from '../src/contracts/weights';
import { names, versionOfWeightsName } from '../src/store/run-names';

export interface ArriveAtSessionInput {
  sessionWorkflowId: string;
  session: RolloutSessionInput;
  arrival: Arrival;
}

export function createPlanActJobActivities({ store, client }: { store: BlobStore; client: Client }) {
  return {
    /** Reads a YAML/JSON run config on the worker, relative to the repository root, and refuses it as resolveRunConfig does. */
    async loadJobConfig({ file, role, trains, allRefusals }: { file: string; role?: JobRole; trains?: boolean } & Pick<ResolveRunConfigInput, 'allRefusals'>): Promise<RunConfig> {
      try {
        const cfg = loadRunConfig(path.resolve(REPO_ROOT, file));
        // Absent role: an input recorded before the check.
        refuseFor(cfg, file, { ...(role ? { consumer: { workflow: 'planActJob', role, ...(trains !== undefined ? { trains } : {}) } } : {}), ...(allRefusals ? { allRefusals } : {}) });
        return cfg;
      } catch (err) {
        throw asConfigFailure(err);
      }
    },

    /** The newest weights `runId` published (publishWeights names them names.weights). */
    async resolveRunWeights({ runId }: { runId: string }): Promise<WeightsInfo> {
      const published = await store.listNames(names.weightsVersionPrefix(runId));
      const name = published.at(-1);
      const onnx = name === undefined ? undefined : await store.getName(name);
      if (name === undefined || onnx === undefined) {
        throw ApplicationFailure.nonRetryable(`run ${JSON.stringify(runId)} has published no weights (nothing under ${names.weightsFolder(runId)})`, 'BadInputError');
      }
      const meta = readOnnxMetadata(await store.get(onnx));
      const version = versionOfWeightsName(name);
      return { version, step: Number(meta.step ?? 0), onnx };
    },

    async arriveAtSession(input: ArriveAtSessionInput): Promise<ArrivalAck> {
      const start = new WithStartWorkflowOperation('rolloutSession', {
        workflowId: input.sessionWorkflowId,
        taskQueue: TASK_QUEUES.orchestration,
        args: [input.session],
        workflowIdConflictPolicy: 'USE_EXISTING',
        typedSearchAttributes: [
          { key: EXPERIMENT, value: input.session.experiment },
          { key: ROLLOUT_ID, value: input.session.rolloutId },
        ],
      });
      try {
        return await client.workflow.executeUpdateWithStart(arriveUpdate, {
          args: [input.arrival],
          // Unique per job execution: a retried activity repeats its update (and gets its answer back),
          // while a job re-run under the same workflow id is a new arrival, never the old run's answer.
          updateId: `arrive-${input.arrival.role}-${input.arrival.jobWorkflowId}${input.arrival.jobRunId ? `-${input.arrival.jobRunId}` : ''}`,
          startWorkflowOperation: start,
        });
      } catch (err) {
        // The session's validator refused this job (role taken, terms differ): no retry can fix that.
        // A session that closed before taking the update is not a refusal: the retry starts a new run.
        if (err instanceof WorkflowUpdateFailedError && !(err.cause instanceof ApplicationFailure && err.cause.type === 'AcceptedUpdateCompletedWorkflow')) {
          throw ApplicationFailure.nonRetryable(`session ${input.sessionWorkflowId} refused the ${input.arrival.role} job: ${err.cause?.message ?? err.message}`, 'SessionRejected');
        }
        throw err;
      }
    },
  };
}

export type PlanActJobActivities = ReturnType<typeof createPlanActJobActivities>;
