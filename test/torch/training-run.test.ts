/**
 * trainingRun with trainer.backend torch on the real dev server: the TypeScript workers serve every
 * queue but training, the PyTorch worker (python/durable_rl_torch, a real OS process) the torch
 * training queue. SFT, two GRPO steps and the evaluations run end to end; the embedded engine serves
 * the torch trainer's GPT-2 checkpoints. Then the torch worker is SIGKILLed in the middle of an update.
 */
import { names } from '../../src/store/run-names';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import { getJson } from '../../src/store/blob-store';
import { HF_CHECKPOINT_KIND, type HfCheckpointManifest } from '../../src/model/hf-checkpoint';
import { testEnv, tinyRlConfig, type TestEnv } from '../helpers/temporal';
import { workerProcesses } from '../helpers/worker-processes';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  ctx = await testEnv('torch-run', ['orchestration', 'inference', 'tools']);
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
});

const torchRun = (rl: Record<string, unknown> = {}) => ({ ...tinyRlConfig(rl), trainer: { backend: 'torch' } });

async function historyEvents(workflowId: string) {
  return (await ctx.env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

/** The manifest each checkpoint name of the run holds, by step. */
async function checkpointManifests(runId: string): Promise<Map<number, HfCheckpointManifest>> {
  const out = new Map<number, HfCheckpointManifest>();
  for (const name of await ctx.store.listNames(names.checkpointPrefix(runId))) {
    const ref = (await ctx.store.getName(name))!;
    expect(ref.kind).toBe(HF_CHECKPOINT_KIND);
    out.set(Number(name.slice(name.lastIndexOf('-') + 1)), await getJson<HfCheckpointManifest>(ctx.store, ref));
  }
  return out;
}

it('runs SFT, two GRPO steps and the evaluations with the torch trainer', async () => {
  const torch = workers.spawnTorchWorker();
  await torch.serving;
  const { workflowId, handle } = await ctx.startTrainingRun('torch', torchRun());
  const result = (await handle.result()) as TrainingRunResult;
  expect(result.rl.map((p) => [p.step, p.weightVersion])).toEqual([[1, 0], [2, 1]]);
  expect(result.checkpoint?.step).toBe(6);
  // Every checkpoint is the torch trainer's Hugging Face manifest, with AdamW's moments after training.
  const manifests = await checkpointManifests(workflowId);
  expect([...manifests.keys()].sort((a, b) => a - b)).toEqual([0, 2, 4, 5, 6]);
  for (const [step, m] of manifests) {
    expect(m.step).toBe(step);
    expect(Object.keys(m.files).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    expect((m as unknown as { optimizer?: unknown }).optimizer !== undefined).toBe(step > 0);
  }
  // Published weights reference torch checkpoints (no ONNX): the embedded engine exported them to play the rollouts.
  expect(result.weights?.hf?.kind).toBe(HF_CHECKPOINT_KIND);
  expect(result.weights?.onnx).toBeUndefined();
  for (const p of result.rl) expect(p.rows).toBeGreaterThan(0);
  // The viewer's record of each update.
  for (const step of [5, 6]) expect(await ctx.store.getName(names.rolloutRecord(workflowId, step))).toBeDefined();
  // The training activities ran on the torch queue.
  const events = await historyEvents(workflowId);
  const queues = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'trainGrpo').map((e) => e.activityTaskScheduledEventAttributes!.taskQueue!.name));
  expect([...queues]).toEqual(['durable-rl-training-torch']);
  await workers.killHard(torch.child);
});

it('retries an update whose torch worker was SIGKILLed mid-way, writing one checkpoint per step', async () => {
  // The worker freezes in the first RL step's update (its first micro-batch), then is killed.
  const frozenWorker = workers.spawnTorchWorker('trainGrpo:microBatch:1');
  await frozenWorker.serving;
  const { workflowId, handle } = await ctx.startTrainingRun('torch-kill', torchRun());
  const line = await frozenWorker.frozen;
  expect(line).toContain('"phase": "update"');
  await workers.killHard(frozenWorker.child);
  const healthy = workers.spawnTorchWorker();
  await healthy.serving;
  const result = (await handle.result()) as TrainingRunResult;
  expect(result.rl.map((p) => p.step)).toEqual([1, 2]);
  // The killed update was attempted again (its heartbeat timed out) and completed once.
  const events = await historyEvents(workflowId);
  const grpoStarts = events.filter((e) => e.activityTaskStartedEventAttributes && events.find((s) => s.eventId?.toString() === e.activityTaskStartedEventAttributes!.scheduledEventId?.toString())?.activityTaskScheduledEventAttributes?.activityType?.name === 'trainGrpo');
  expect(grpoStarts.map((e) => e.activityTaskStartedEventAttributes!.attempt)).toEqual([2, 1]);
  // One checkpoint name per step, and no step's checkpoint stored twice with other bytes.
  const manifests = await checkpointManifests(workflowId);
  expect([...manifests.keys()].sort((a, b) => a - b)).toEqual([0, 2, 4, 5, 6]);
  await workers.killHard(healthy.child);
});
