/**
 * The project's own Prometheus metrics (prom-client), next to the Temporal SDK's runtime metrics on
 * the same endpoint (metrics-server.ts). Names start with durable_rl_; what feeds them is
 * activity-metrics.ts, which reads activity timings, inputs and results, so activities stay as they are.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Seconds over which durable_rl_generated_tokens_per_second averages. */
export const TOKENS_WINDOW_SEC = 30;

export class ProjectMetrics {
  readonly registry = new Registry();

  /** From an attempt's scheduling to its start on this worker: how long work waits for a slot here. */
  readonly queueSeconds = new Histogram({
    name: 'durable_rl_activity_queue_seconds',
    help: 'Seconds from an activity attempt being scheduled to it starting on this worker (task-queue latency)',
    labelNames: ['task_queue', 'activity'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });

  readonly activitySeconds = new Histogram({
    name: 'durable_rl_activity_seconds',
    help: 'Seconds an activity attempt ran on this worker, by outcome (ok, error)',
    labelNames: ['task_queue', 'activity', 'outcome'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [this.registry],
  });

  readonly generatedTokens = new Counter({
    name: 'durable_rl_generated_tokens_total',
    help: 'Response tokens returned by completed generate activities on this worker (rate() gives tokens per second)',
    registers: [this.registry],
  });

  readonly trainStepSeconds = new Histogram({
    name: 'durable_rl_train_step_seconds',
    help: 'Seconds per training step: a trainGrpo update (kind grpo), or a trainSft chunk divided by its steps (kind sft)',
    labelNames: ['kind'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });

  readonly episodeReward = new Histogram({
    name: 'durable_rl_episode_reward',
    help: 'Outcome reward of each episode whose samples this worker wrote (writeEpisodeSamples: Plan/Act, single-agent and tree rollouts)',
    buckets: [-1, -0.5, 0, 0.1, 0.25, 0.5, 0.75, 0.9, 1],
    registers: [this.registry],
  });

  /** (time, tokens) of recent generate completions, for the windowed rate below. */
  private readonly recentTokens: Array<[number, number]> = [];

  constructor(opts: { processMetrics?: boolean } = {}) {
    const recent = this.recentTokens;
    new Gauge({
      name: 'durable_rl_generated_tokens_per_second',
      help: `Response tokens generated per second on this worker over the last ${TOKENS_WINDOW_SEC} s`,
      registers: [this.registry],
      collect() {
        const since = Date.now() - TOKENS_WINDOW_SEC * 1000;
        while (recent.length > 0 && recent[0]![0] < since) recent.shift();
        this.set(recent.reduce((n, [, t]) => n + t, 0) / TOKENS_WINDOW_SEC);
      },
    });
    // CPU, memory and event-loop lag of the worker process (a blocked loop delays heartbeats).
    if (opts.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  addGeneratedTokens(tokens: number): void {
    this.generatedTokens.inc(tokens);
    this.recentTokens.push([Date.now(), tokens]);
  }
}
