/**
 * SIGKILL of the inference worker in the middle of a tree rollout's expansion phase: the worker (a
 * separate process running the production inference worker) freezes as its first expansion
 * batch of generate requests starts, is killed there, and a fresh one takes over. Every node the tree
 * finished before the kill stays finished: each node's request is in exactly one completed
 * generateBatch, and only the batch in flight on the killed worker (the expansion's pending nodes)
 * runs a second attempt.
 */
import type { GenerateBatchInput } from '../../activities/inference';
import { createTrainingActivities } from '../../activities/training';
import { parseRunConfig } from '../../src/config/parse';
import type { TreeNode } from '../../src/tree';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { treeStateQuery } from '../../workflows/messages';
import type { TreeRolloutInput } from '../../src/contracts/tree';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  ctx = await testEnv('tree-crash', ['orchestration', 'training', 'tools']);
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
});

it('loses no finished node when the inference worker is SIGKILLed mid-expansion', async () => {
  const runId = uniqueId('tree-crash');
  const training = createTrainingActivities({ store: ctx.store });
  const model = { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 128 };
  const init = await training.initPolicy({ runId, model, seed: 5 });
  const weights = await training.publishWeights({ runId, checkpoint: init.checkpoint, version: 0 });
  // A fresh policy rarely writes a tool call, so phase 2 is one generate request per initial branch
  // (2 × 2), made together: one generateBatch; the 2nd is then the first of the expansion phase.
  const config = parseRunConfig({
    seed: 4,
    model,
    rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 12 },
    rollout: { kind: 'tree' },
    tree: { initialRollouts: 2, expansionIterations: 2, beamSize: 2, samplesPerRoot: 2, maxToolCallsPerNode: 0 },
    timeouts: { heartbeatSec: 3 },
  });
  const frozenWorker = workers.spawnFreezingWorker('inference', 'generateBatch:start:2');
  const input: TreeRolloutInput = { runId, rolloutId: 1, config, policy: { weights } };
  const handle = await ctx.env.client.workflow.start('treeRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: runId, args: [input] });

  expect(await frozenWorker.frozen).toBe('FROZEN generateBatch {"start":2}');
  const during = await handle.query(treeStateQuery);
  expect(during).toMatchObject({ phase: 'expansion', iteration: 1 });
  const finishedBefore = (during.nodes as TreeNode[]).filter((n) => n.depth > 0 && n.status !== 'pending').map((n) => n.id);
  expect(finishedBefore).toHaveLength(4);
  await workers.killHard(frozenWorker.child);
  workers.spawnWorker('inference');

  const result = (await handle.result()) as RolloutSummary;
  const nodes = (await handle.query(treeStateQuery)).nodes as TreeNode[];
  const segments = nodes.filter((n) => n.depth > 0);
  expect(segments.every((n) => n.status === 'leaf')).toBe(true);
  expect(result.tree!.nodes).toBe(segments.length);
  // Branches re-send their root's prompt: the inference workers' prefix cache served part of it.
  expect(result.tree!.cachedPromptTokens).toBeGreaterThan(0);
  expect(result.tree!.cachedPromptTokens).toBeLessThan(result.tree!.promptTokens!);
  // Nodes finished before the kill are unchanged after it.
  for (const id of finishedBefore) expect(segments.find((n) => n.id === id)).toMatchObject((during.nodes as TreeNode[]).find((n) => n.id === id)!);

  const events = (await handle.fetchHistory()).events ?? [];
  // Every node's request in exactly one generateBatch, each batch completed once; only the batch in
  // flight at the kill ran again, once.
  const batches = new Map(
    events.flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a?.activityType?.name === 'generateBatch' ? [[String(e.eventId), (JSON.parse(new TextDecoder().decode(a.input!.payloads![0]!.data!)) as GenerateBatchInput).requests.length] as const] : [];
    }),
  );
  const completed = events.filter((e) => e.activityTaskCompletedEventAttributes && batches.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)));
  const retried = events.filter((e) => e.activityTaskStartedEventAttributes && batches.has(String(e.activityTaskStartedEventAttributes.scheduledEventId)) && (e.activityTaskStartedEventAttributes.attempt ?? 1) > 1);
  expect([...batches.values()].reduce((a, b) => a + b, 0)).toBe(segments.length);
  expect(completed).toHaveLength(batches.size);
  expect(retried).toHaveLength(1);
  expect(retried[0]!.activityTaskStartedEventAttributes!.attempt).toBe(2);
}, 180_000);
