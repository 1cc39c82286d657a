/**
 * An activity interceptor that feeds ProjectMetrics from every activity this worker runs: queue
 * latency and run time for all of them, and from known activities' inputs and results the domain
 * numbers (tokens generated, train-step seconds, episode rewards).
 *
 * A retried trainSft/trainGrpo that finds its result already stored (onceByName) returns at once, and
 * its short lookup is then counted as a step; retries are rare enough not to skew the histogram.
 */
import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { ProjectMetrics } from './project-metrics';

export function activityMetrics(metrics: ProjectMetrics): ActivityInterceptorsFactory {
  return (ctx: Context) => ({
    inbound: {
      async execute(input, next) {
        const { activityType: activity, taskQueue, currentAttemptScheduledTimestampMs } = ctx.info;
        const started = Date.now();
        metrics.queueSeconds.observe({ task_queue: taskQueue, activity }, Math.max(0, started - currentAttemptScheduledTimestampMs) / 1000);
        let outcome = 'error';
        try {
          const result = await next(input);
          outcome = 'ok';
          recordDomain(metrics, activity, input.args[0], result, (Date.now() - started) / 1000);
          return result;
        } finally {
          metrics.activitySeconds.observe({ task_queue: taskQueue, activity, outcome }, (Date.now() - started) / 1000);
        }
      },
    },
  });
}

function recordDomain(metrics: ProjectMetrics, activity: string, arg: unknown, result: unknown, seconds: number): void {
  switch (activity) {
    case 'generate': {
      const tokens = numberField(result, 'responseTokens');
      if (tokens !== undefined) metrics.addGeneratedTokens(tokens);
      break;
    }
    case 'trainGrpo':
      metrics.trainStepSeconds.observe({ kind: 'grpo' }, seconds);
      break;
    case 'trainSft': {
      const losses = field(result, 'losses');
      const steps = Array.isArray(losses) ? losses.length : 0;
      for (let i = 0; i < steps; i++) metrics.trainStepSeconds.observe({ kind: 'sft' }, seconds / steps);
      break;
    }
    case 'writeEpisodeSamples': {
      const episodes = field(arg, 'episodes');
      if (Array.isArray(episodes)) {
        for (const e of episodes) {
          const reward = numberField(e, 'reward');
          if (reward !== undefined) metrics.episodeReward.observe(reward);
        }
      }
      break;
    }
  }
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}

function numberField(value: unknown, key: string): number | undefined {
  const v = field(value, key);
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
