/** Tool-call metrics of episodes, summed up a rollout. */
import type { ToolMetrics } from '../src/contracts/rollout-summary';

export function emptyToolMetrics(): ToolMetrics {
  return { calls: 0, failures: 0, retries: 0, ms: 0 };
}

export function addToolMetrics(a: ToolMetrics, b: ToolMetrics): ToolMetrics {
  return { calls: a.calls + b.calls, failures: a.failures + b.failures, retries: a.retries + b.retries, ms: a.ms + b.ms };
}

