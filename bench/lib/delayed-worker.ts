/**
 * A production worker process (workers/main.ts) whose generate activities first wait a set time, for
 * `npm run bench:async -- --layout processes --simulate-gpu-ms L`: the latency a GPU engine on other
 * devices would add, in a worker process of its own (the in-process layout uses an interceptor).
 *
 *   DURABLE_RL_GENERATE_DELAY_MS=300 node dist/bench/lib/delayed-worker.js <queue>...
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { interceptEveryWorker } from '../../scripts/lib/intercept-workers';
import { runWorkerProcess } from '../../workers/main';
import type { TaskQueueName } from '../../workflows/task-queues';

const delayMs = Number(process.env.DURABLE_RL_GENERATE_DELAY_MS ?? '0');
if (!(delayMs >= 0)) throw new Error(`DURABLE_RL_GENERATE_DELAY_MS must be a number of milliseconds ≥ 0, got ${process.env.DURABLE_RL_GENERATE_DELAY_MS}`);

interceptEveryWorker((ctx) => ({
  inbound: {
    async execute(input, next) {
      // A batch of requests (generateBatch) waits once, as a GPU engine serves a batch's rows together.
      if (delayMs > 0 && (ctx.info.activityType === 'generate' || ctx.info.activityType === 'generateBatch')) await sleep(delayMs);
      return next(input);
    },
  },
}));

void runWorkerProcess(process.argv.slice(2) as TaskQueueName[]).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
