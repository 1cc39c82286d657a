/**
 * bench:planact's worker process: the production worker (workers/main.ts) for the queues given,
 * whose local calls (rollout.batchRequests 'local') are the bench's oracle engine, waiting its
 * latency per request (bench/lib/oracle-latency.ts), and the calculator: what an orchestration worker
 * that hosts an engine client runs them with.
 *
 *   DURABLE_RL_STORE=<dir> DURABLE_RL_BENCH_LATENCY_MS=5000 DURABLE_RL_BENCH_JITTER=0.5 node dist/bench/lib/planact-worker.js orchestration
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerateInput } from '../../activities/inference';
import { createOracleInferenceActivities } from '../../activities/oracle-inference';
import { createToolActivities } from '../../activities/tools';
import { FsBlobStore } from '../../src/store/fs-blob-store';
import { runWorkerProcess } from '../../workers/main';
import type { TaskQueueName } from '../../workflows/task-queues';
import { requestLatency } from './oracle-latency';

function numberEnv(name: string): number {
  const v = Number(process.env[name]);
  if (!(v >= 0)) throw new Error(`${name} must be a number ≥ 0, got ${process.env[name]}`);
  return v;
}

const latencyMs = numberEnv('DURABLE_RL_BENCH_LATENCY_MS');
const jitter = numberEnv('DURABLE_RL_BENCH_JITTER');
const store = process.env.DURABLE_RL_STORE;
if (!store) throw new Error('DURABLE_RL_STORE is not set: the bench gives its blob store');
const oracle = createOracleInferenceActivities({ store: new FsBlobStore(store) });
const tools = createToolActivities();

void runWorkerProcess(process.argv.slice(2) as TaskQueueName[], [], {
  localCalls: {
    async generate(input: GenerateInput) {
      await sleep(requestLatency(latencyMs, jitter, input.role, input.prompt, input.params.seed));
      return oracle.generate(input);
    },
    calcWithAttempt: tools.calcWithAttempt,
  },
}).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
