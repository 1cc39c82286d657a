/**
 * Shared entry logic: connect to TEMPORAL_ADDRESS, run the workers for the given queues until
 * SIGINT/SIGTERM. Each workers/<queue>.ts file is a one-line call of this.
 */
import { NativeConnection } from '@temporalio/worker';
import type { TaskQueueName } from '../workflows/shared';
import { createWorkers, defaultStore } from './create-workers';

export async function runWorkerProcess(queues: readonly TaskQueueName[]): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
  const connection = await NativeConnection.connect({ address });
  try {
    const workers = await createWorkers({
      connection,
      queues,
      store: defaultStore(),
      namespace: process.env.TEMPORAL_NAMESPACE,
      inferenceConcurrency: envInt('DURABLE_RL_INFERENCE_CONCURRENCY'),
      trainingSlots: envInt('DURABLE_RL_TRAINING_SLOTS'),
    });
    console.log(`[worker ${process.pid}] serving ${queues.join(', ')} at ${address}`);
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    await connection.close();
  }
}

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

export function main(queues: readonly TaskQueueName[]): void {
  runWorkerProcess(queues).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
