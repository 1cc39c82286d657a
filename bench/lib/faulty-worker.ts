/**
 * A production worker process (workers/main.ts) whose activities fail at a set rate, for
 * `npm run bench:chaos`: with probability DURABLE_RL_FAULT_RATE an activity attempt throws a
 * retryable error before it runs (an injected fault, as a flaky dependency would), and Temporal's
 * retry policy has to carry the run through it.
 *
 *   DURABLE_RL_FAULT_RATE=0.02 node dist/bench/lib/faulty-worker.js <queue>...
 */
import { ApplicationFailure } from '@temporalio/common';
import { interceptEveryWorker } from '../../scripts/lib/intercept-workers';
import { runWorkerProcess } from '../../workers/main';
import type { TaskQueueName } from '../../workflows/task-queues';

const rate = Number(process.env.DURABLE_RL_FAULT_RATE ?? '0');
if (!(rate >= 0 && rate < 1)) throw new Error(`DURABLE_RL_FAULT_RATE must be in [0, 1), got ${process.env.DURABLE_RL_FAULT_RATE}`);

interceptEveryWorker((ctx) => ({
  inbound: {
    async execute(input, next) {
      if (Math.random() < rate) {
        process.stdout.write(`FAULT ${ctx.info.activityType} attempt ${ctx.info.attempt}\n`);
        throw ApplicationFailure.retryable(`injected fault in ${ctx.info.activityType} (bench:chaos)`, 'InjectedFault');
      }
      return next(input);
    },
  },
}));

void runWorkerProcess(process.argv.slice(2) as TaskQueueName[]).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
