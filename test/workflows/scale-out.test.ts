/**
 * Scale-out on the real servers: every task queue served by its own OS process (the production
 * worker entries), two inference processes sharing the generate load, all of them on one S3 blob
 * store (versitygw, started by global-setup), and nothing in-process but the client.
 *
 * 1. A trainingRun (SFT, an evaluation, one GRPO step on a rollout) completes; the histories show
 *    which process ran what; the run's checkpoints and samples are in S3; the metrics ports serve
 *    the SDK's and the project's metrics.
 * 2. An inference process is SIGKILLed mid-rollout (it freezes as its third generate starts, with
 *    two slots, so it has finished at least one): the rollout completes on the other process with
 *    every generation completed exactly once and exactly one sample per generation.
 */
import type { ChildProcess } from 'node:child_process';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { names } from '../../src/store/run-names';
import { readSamples } from '../../src/contracts/sample-set';
import { createTrainingActivities } from '../../activities/training';
import { freePort } from '../../scripts/lib/dev-server';
import { parseRunConfig } from '../../src/config/parse';
import type { Sample } from '../../src/domain/types';
import { S3BlobStore } from '../../src/store/s3-blob-store';
import type { PlanActRolloutInput } from '../../src/contracts/rollout-inputs';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { testS3, uniquePrefix } from '../helpers/s3';
import { createTestNamespace, testAddress, tinyRunConfig, uniqueId } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const TASK_QUEUE_TYPE_ACTIVITY = temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY;

const s3 = testS3();
const prefix = uniquePrefix('scale-out');
const store = new S3BlobStore(s3.client, { bucket: s3.bucket, prefix });
let connection: Connection;
let client: Client;
let workers: ReturnType<typeof workerProcesses>;
let namespace: string;
/** pid of each long-lived process, by entry. */
const pids: Record<string, number> = {};
const metricsPorts: Record<string, number> = {};

const identityOf = (pid: number) => new RegExp(`^${pid}@`);

beforeAll(async () => {
  namespace = await createTestNamespace('scale-out');
  connection = await Connection.connect({ address: testAddress() });
  client = new Client({ connection, namespace });
  // The AWS SDK warns once per process that Node 20 support ends in 2027; the test output does not need it.
  workers = workerProcesses({ namespace }, { ...s3.env(prefix), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' });
  for (const entry of ['orchestration', 'trainer', 'tools'] as const) {
    metricsPorts[entry] = await freePort();
    pids[entry] = workers.spawnWorker(entry, { DURABLE_RL_METRICS_PORT: String(metricsPorts[entry]), DURABLE_RL_METRICS_HOST: '127.0.0.1' }).pid!;
  }
});

afterAll(async () => {
  await workers?.killAll();
  await connection?.close();
});

/** The workflow's history and those of all its descendants. */
async function historiesBelow(workflowId: string): Promise<HistoryEvent[][]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const children = events.flatMap((e) => (e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ? [e.childWorkflowExecutionStartedEventAttributes.workflowExecution.workflowId] : []));
  return [events, ...(await Promise.all(children.map(historiesBelow))).flat()];
}

interface ActivityRun {
  type: string;
  /** A batch activity's requests (generateBatch); 1 for any other. */
  requests: number;
  identity: string;
  attempt: number;
  completed: boolean;
}

/** Every activity of a history: its type, the identity of the worker that ran its last attempt, that attempt, and whether it completed. */
function activityRuns(events: HistoryEvent[]): ActivityRun[] {
  const scheduled = new Map<string, { type: string; requests: number }>();
  const runs = new Map<string, ActivityRun>();
  for (const e of events) {
    const id = String(e.eventId);
    const a = e.activityTaskScheduledEventAttributes;
    if (a) scheduled.set(id, { type: a.activityType?.name ?? '?', requests: requestsOf(a.input?.payloads?.[0]?.data) });
    const started = e.activityTaskStartedEventAttributes;
    if (started) runs.set(String(started.scheduledEventId), { ...scheduled.get(String(started.scheduledEventId))!, identity: started.identity ?? '', attempt: started.attempt ?? 1, completed: false });
    const done = e.activityTaskCompletedEventAttributes;
    if (done) runs.get(String(done.scheduledEventId))!.completed = true;
  }
  return [...scheduled.keys()].map((id) => runs.get(id) ?? { ...scheduled.get(id)!, identity: '', attempt: 0, completed: false });
}

/** How many requests an activity's input carries: a batch's requests, else 1. */
function requestsOf(data: Uint8Array | null | undefined): number {
  if (!data) return 1;
  const input = JSON.parse(new TextDecoder().decode(data)) as { requests?: unknown[] } | null;
  return Array.isArray(input?.requests) ? input.requests.length : 1;
}

async function scrape(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/** A sample (counter or histogram count) from a Prometheus text exposition, 0 when absent. */
function metricValue(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels ? `{${labels}` : ''}`) && (labels || l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').pop()) : 0;
}

/** Waits until a process of each pid polls the queue (a process takes seconds to start on a busy 2-core machine). */
async function waitForPollers(queue: string, pidsToSee: number[]): Promise<void> {
  for (;;) {
    const { pollers } = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue },
      taskQueueType: TASK_QUEUE_TYPE_ACTIVITY,
    });
    const identities = (pollers ?? []).map((p) => p.identity ?? '');
    if (pidsToSee.every((pid) => identities.some((i) => identityOf(pid).test(i)))) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

it('runs a training run with orchestration, two inference, training and tools processes on the S3 store', async () => {
  // Two slots each: the 4 GRPO groups' first wave of generate batches is 4 activities at once, so
  // once both processes poll, neither can take them all.
  const inference = [workers.spawnWorker('inference', { DURABLE_RL_INFERENCE_CONCURRENCY: '2' }), workers.spawnWorker('inference', { DURABLE_RL_INFERENCE_CONCURRENCY: '2' })];
  try {
    await waitForPollers(TASK_QUEUES.inference, inference.map((p) => p.pid!));
    await runOnTwoInferenceProcesses(inference);
  } finally {
    // Killed even when an assertion failed: a live process would take the next test's work.
    await Promise.all(inference.map((p) => workers.killHard(p)));
  }
}, 240_000);

async function runOnTwoInferenceProcesses(inference: ChildProcess[]): Promise<void> {
  const workflowId = uniqueId('scale-run');
  const handle = await client.workflow.start('trainingRun', {
    taskQueue: TASK_QUEUES.orchestration,
    workflowId,
    args: [tinyRunConfig({ eval: { everySteps: 4, maxNewTokens: 8 }, rl: { steps: 1, promptsPerStep: 4, groupSize: 4, maxNewTokens: 12 } })],
  });
  const result = (await handle.result()) as TrainingRunResult;
  expect(result.sftSteps).toBe(4);
  expect(result.rlSteps).toBe(1);

  const runs = (await historiesBelow(workflowId)).flatMap(activityRuns);
  const ranOn = (type: string) => new Set(runs.filter((r) => r.type === type).map((r) => r.identity));
  // Each queue's work ran in its own process; 16 episodes' generates were shared by both inference processes.
  for (const [type, entry] of [['trainSft', 'trainer'], ['trainGrpo', 'trainer'], ['writeEpisodeSamples', 'orchestration']] as const) {
    expect([...ranOn(type)]).toEqual([expect.stringMatching(identityOf(pids[entry]!))]);
  }
  const generateIdentities = [...ranOn('generateBatch')];
  expect(generateIdentities).toHaveLength(2);
  for (const p of inference) expect(generateIdentities.some((i) => identityOf(p.pid!).test(i))).toBe(true);
  expect(runs.every((r) => r.completed)).toBe(true);

  // Checkpoints and samples are in S3, where any host can read them.
  expect(await store.listNames(names.checkpointPrefix(workflowId))).toHaveLength(4);

  // Metrics: the SDK's runtime metrics and the project's, on each process's one port.
  const orchestration = await scrape(metricsPorts.orchestration!);
  expect(orchestration).toMatch(/^temporal_\w+/m);
  expect(metricValue(orchestration, 'durable_rl_episode_reward_count')).toBe(16);
  expect(metricValue(orchestration, 'durable_rl_activity_queue_seconds_count', 'task_queue="durable-rl-orchestration",activity="writeEpisodeSamples"')).toBeGreaterThan(0);
  const trainer = await scrape(metricsPorts.trainer!);
  expect(metricValue(trainer, 'durable_rl_train_step_seconds_count', 'kind="sft"')).toBe(4);
  expect(metricValue(trainer, 'durable_rl_train_step_seconds_count', 'kind="grpo"')).toBe(1);
  expect(trainer).toMatch(/^temporal_activity_execution_latency\w*_count\{.*activity_type="trainGrpo"/m);
}

it('loses and duplicates no sample when an inference process is SIGKILLed mid-rollout', async () => {
  const runId = uniqueId('scale-crash');
  const config = parseRunConfig({
    seed: 11,
    model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 128 },
    rl: { promptsPerStep: 4, groupSize: 2, maxNewTokens: 12 },
    rollout: { maxTurns: 2 },
    // One sample per generation, so "no sample lost or duplicated" is a count.
    timeline: { merge: false },
    timeouts: { heartbeatSec: 3 },
  });
  const training = createTrainingActivities({ store });
  const init = await training.initPolicy({ runId, model: config.model, seed: 5 });
  const weights = await training.publishWeights({ runId, checkpoint: init.checkpoint, version: 0 });

  // Alone on the queue with two slots, the first process must take the first batches of generate
  // requests (one per GRPO group's wave); it freezes as its third starts, so it has completed at
  // least one and holds up to two in flight.
  const frozen = workers.spawnFreezingWorker('inference', 'generateBatch:start:3', { DURABLE_RL_INFERENCE_CONCURRENCY: '2' });
  const input: PlanActRolloutInput = { runId, rolloutId: 1, mode: 'shared', config, policies: { planner: { weights }, actor: { weights } } };
  const handle: WorkflowHandle = await client.workflow.start('planActRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: runId, args: [input] });
  expect(await frozen.frozen).toBe('FROZEN generateBatch {"start":3}');
  const healthy = workers.spawnWorker('inference');
  await workers.killHard(frozen.child);

  const summary = (await handle.result()) as RolloutSummary;
  expect(summary.episodes).toBe(8);

  const generates = (await historiesBelow(runId)).flatMap(activityRuns).filter((r) => r.type === 'generateBatch');
  // Every generation completed exactly once (in one batch each, each batch completed), some after a retry.
  expect(generates.every((g) => g.completed)).toBe(true);
  expect(generates.reduce((n, g) => n + g.requests, 0)).toBe(summary.metrics.generations);
  const retried = generates.filter((g) => g.attempt > 1);
  expect(retried.length).toBeGreaterThanOrEqual(1);
  expect(retried.length).toBeLessThanOrEqual(2);
  expect(retried.every((g) => identityOf(healthy.pid!).test(g.identity))).toBe(true);
  // The killed process finished some before it died; the other finished the rest.
  expect(generates.some((g) => identityOf(frozen.child.pid!).test(g.identity))).toBe(true);

  // Exactly one sample per generation, read back from S3: none lost, none twice.
  const samples: Sample[] = (await Promise.all(Object.values(summary.samples).map((set) => readSamples(store, set.ref)))).flat();
  expect(samples).toHaveLength(summary.metrics.generations);
  const keys = samples.map((s) => `${s.metadata.episodeId}|${s.metadata.role}|${s.metadata.turn}|${s.metadata.actId ?? ''}`);
  expect(new Set(keys).size).toBe(samples.length);
  expect(new Set(samples.map((s) => s.metadata.episodeId))).toEqual(new Set(summary.rows.map((r) => r.episodeId)));
}, 240_000);
