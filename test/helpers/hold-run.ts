/** Holds a run at a chosen step from inside the test's own workers, until the test lets it go on. */
import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { RunState } from '../../src/contracts/training-run';

export interface RunHold {
  /** For testEnv's activityInterceptors. */
  interceptor: ActivityInterceptorsFactory;
  release(): void;
}

/** Holds run `runId`'s state save at checkpoint step `step` (its checkpoint there is named already), heartbeating, until release(). */
export function holdRunStateSave(runId: string, step: number): RunHold {
  let released = false;
  return {
    interceptor: () => ({
      inbound: {
        async execute(input, next) {
          const ctx = Context.current();
          const arg = input.args[0] as { runId?: string; state?: RunState } | undefined;
          if (ctx.info.activityType === 'saveRunState' && arg?.runId === runId && arg.state?.checkpoint?.step === step) {
            while (!released) {
              ctx.heartbeat('held by the test');
              await new Promise((r) => setTimeout(r, 200));
            }
          }
          return next(input);
        },
      },
    }),
    release: () => {
      released = true;
    },
  };
}
