/** A workflow that only hops: n no-op activities one after another (bench/hop-latency.ts). */
import { proxyActivities } from '@temporalio/workflow';

export const HOP_ACTIVITY_QUEUE = 'bench-hop-activities';

const { noop } = proxyActivities<{ noop(): Promise<void> }>({ startToCloseTimeout: '10s', taskQueue: HOP_ACTIVITY_QUEUE });

export async function noopChain(n: number): Promise<number> {
  for (let i = 0; i < n; i++) await noop();
  return n;
}
