/**
 * Orchestration-queue activities that write a run's TensorBoard event file (tracking.tensorboard):
 * open the run's folder (checked at the run's start: a folder that cannot be written refuses the run,
 * naming tracking.tensorboard.dir) and append its logged lines as scalars. The write is idempotent
 * (scripts/python/tensorboard_writer.py): the workflow sends one at a time, in order, retrying with
 * backoff while training goes on (workflows/tensorboard-log.ts).
 */
import { ApplicationFailure, heartbeat } from '@temporalio/activity';
import { ConfigError } from '../src/config/errors';
import type { TrackingBatch } from '../src/contracts/tracking';
import { makeTensorboardRunDir, tensorboardPoints, tensorboardRunDir, TENSORBOARD_DIR_KEY } from '../src/tracking/tensorboard';
import { TensorboardWriter } from './tensorboard-writer';

export interface OpenTensorboardInput {
  dir: string;
  workflowId: string;
  /** A later execution (continue-as-new, --resume): its folder was accepted at the start, and a failure now is retried, not a refusal. */
  continued: boolean;
}

export interface WriteTensorboardInput {
  runDir: string;
  /** In the order they were logged. */
  batches: TrackingBatch[];
}

/** `writer`: the process the activities share (default: one of their own, started on the first write). */
export function createTensorboardActivities({ writer = new TensorboardWriter() }: { writer?: TensorboardWriter } = {}) {
  return {
    async openTensorboard(input: OpenTensorboardInput): Promise<{ runDir: string }> {
      const runDir = tensorboardRunDir(input.dir, input.workflowId);
      let problem = await makeTensorboardRunDir(runDir);
      if (!problem) {
        try {
          await writer.open(runDir);
        } catch (err) {
          problem = { path: TENSORBOARD_DIR_KEY, message: `TensorBoard's writer cannot use ${runDir}: ${(err as Error).message}` };
        }
      }
      if (problem) {
        if (input.continued) throw ApplicationFailure.retryable(`${problem.path}: ${problem.message}`, 'TrackerUnavailable');
        const err = new ConfigError('workflow input', [problem]);
        throw ApplicationFailure.nonRetryable(err.message, 'ConfigError', err.problems);
      }
      return { runDir };
    },

    async writeTensorboard(input: WriteTensorboardInput): Promise<{ written: number; skipped: number }> {
      const done = await writer.write(input.runDir, tensorboardPoints(input.batches));
      // After the write (a kill test freezes here: the retry must add nothing).
      heartbeat(done);
      return done;
    },
  };
}

export type TensorboardActivities = ReturnType<typeof createTensorboardActivities>;
