/**
 * The remote engine against a real vLLM (the CPU build setup installs, started here the way
 * `npm run engine:vllm` starts it), serving this project's policy exported as a Hugging Face
 * directory: the server's ids and logprobs equal the embedded engine's on the same weights, stop
 * strings and EOS are read right, errors are typed, and a trainingRun trains the served policy with
 * its weights synced into the server every step, synchronously and asynchronously (a rollout in
 * flight across a sync goes on with the new weights, each call labelled with what the server served).
 *
 * vLLM's CPU attention supports head sizes of 32 and up, so the test policy has two heads of 32.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createInferenceActivities, type GenerateBatchInput, type GenerateInput, type GenerateResult, type SyncRemoteWeightsInput } from '../../activities/inference';
import type { BatchOutcome } from '../../src/contracts/batch';
import { names } from '../../src/store/run-names';
import { readSamples } from '../../src/contracts/sample-set';
import type { SamplingParams } from '../../src/domain/types';
import { OrtEngine } from '../../src/engine/ort-engine';
import { RemoteEngineRequestError, RemoteOpenAIEngine } from '../../src/engine/openai-engine';
import { reloadVllmWeights, servedWeightVersion } from '../../src/engine/vllm-weights';
import type { GptConfig } from '../../src/model/arch';
import { writeHfDir } from '../../src/model/hf-dir';
import { exportOnnx } from '../../src/model/onnx-export';
import { loadTokenizer } from '../../src/model/tokenizer';
import { getJson, type BlobStore } from '../../src/store/blob-store';
import type { CompletionTokens } from '../../src/contracts/generation';
import type { PlanActJobResult } from '../../src/contracts/plan-act-job';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { RunConfigInput } from '../../src/config/schema';
import { freePort } from '../../scripts/lib/dev-server';
import { startVllm, type RunningVllm } from '../../scripts/lib/vllm-server';
import { sharpWeights } from '../model/helpers';
import { tempStore } from '../helpers/store';
import { testEnv, tinyRunConfig, uniqueId } from '../helpers/temporal';

const tok = loadTokenizer();
const MODEL = { dModel: 64, nLayers: 2, nHeads: 2, dFf: 128, maxSeq: 192 };
const cfg: GptConfig = { vocabSize: tok.vocabSize, ...MODEL };
const SFT_STEPS = 120;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'vllm-test-'));
let server: RunningVllm;
let baseUrl: string;

beforeAll(async () => {
  const initial = writeHfDir(path.join(work, 'initial'), { config: cfg, weights: sharpWeights(cfg, 5, 4), tokenizer: tok });
  server = await startVllm({ model: initial, port: await freePort(), servedModelName: 'policy', logFile: path.join(work, 'vllm.log') });
  baseUrl = `${server.baseUrl}/v1`;
}, 300_000);

afterAll(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

const prompts = ['Evaluate: 12+34\n', 'Compute: 17+25+8+31\n', 'ACT 1: 3*4\n'];

async function embedded(weights: ReturnType<typeof sharpWeights>, version: number): Promise<OrtEngine> {
  return OrtEngine.create({ onnx: exportOnnx(cfg, weights), config: cfg, tokenizer: tok, weightVersion: version });
}

describe('the remote engine on a real vLLM server', () => {
  const weights = sharpWeights(cfg, 11, 6);
  let local: OrtEngine;
  let remote: RemoteOpenAIEngine;

  beforeAll(async () => {
    await reloadVllmWeights(baseUrl, writeHfDir(path.join(work, 'sharp'), { config: cfg, weights, tokenizer: tok }), 100);
    local = await embedded(weights, 100);
    remote = new RemoteOpenAIEngine({ baseUrl, model: 'policy', tokenizer: tok });
  });

  afterAll(async () => {
    await local?.release();
  });

  it.each([1, 0.7])('returns ids and logprobs the embedded engine gives the same weights, at T=%s', async (temperature) => {
    expect(await servedWeightVersion(baseUrl)).toBe('100');
    for (const [i, prompt] of prompts.entries()) {
      const params: SamplingParams = { maxNewTokens: 24, temperature, topP: 1, stop: [], seed: 40 + i };
      const c = await remote.complete(prompt, params);
      expect(c.promptTokenIds).toEqual(tok.encode(prompt));
      expect(c.tokenIds.length).toBeGreaterThan(0);
      const mine = await local.scoreTokens(c.promptTokenIds, c.tokenIds, temperature);
      const diff = Math.max(...c.logprobs.map((lp, k) => Math.abs(lp - mine[k]!)));
      expect(diff).toBeLessThan(1e-3);
      // The text is the ids' own text.
      expect(c.text).toBe(tok.decode(c.finishReason === 'eos' ? c.tokenIds.slice(0, -1) : c.tokenIds));
    }
  });

  it('decodes greedily to the same tokens as the embedded engine', async () => {
    const params: SamplingParams = { maxNewTokens: 20, temperature: 0, topP: 1, stop: [] };
    for (const prompt of prompts) {
      const [mine] = await local.generate([prompt], params);
      const theirs = await remote.complete(prompt, params);
      expect(theirs.tokenIds).toEqual(mine!.tokenIds);
      expect(theirs.finishReason).toBe(mine!.finishReason);
    }
  });

  it('keeps the stop string in text and ids and reports a stop, not an EOS', async () => {
    // A seeded request samples the same tokens again, so a piece of its own output is a stop string
    // the repeat must hit, at the same place.
    const params: SamplingParams = { maxNewTokens: 24, temperature: 1, topP: 1, stop: [], seed: 5 };
    const free = await remote.complete('Evaluate: 12+34\n', params);
    const k = free.tokenIds.findIndex((id, i) => i >= 3 && id !== tok.eosId && tok.decode([id]).trim().length > 0);
    expect(k).toBeGreaterThan(0);
    const stop = tok.decode([free.tokenIds[k]!]);
    const first = tok.decode(free.tokenIds).indexOf(stop);
    const stopped = await remote.complete('Evaluate: 12+34\n', { ...params, stop: [stop] });
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.text.includes(stop)).toBe(true);
    expect(stopped.tokenIds).toEqual(free.tokenIds.slice(0, stopped.tokenIds.length));
    // It ends at the token that completes the first occurrence.
    expect(tok.decode(stopped.tokenIds).length).toBeGreaterThanOrEqual(first + stop.length);
    expect(tok.decode(stopped.tokenIds.slice(0, -1)).includes(stop)).toBe(false);
  });

  it('an unknown model and an overlong prompt are typed, non-retryable failures of the generate activity', async () => {
    const activities = createInferenceActivities({ store: tempStore('vllm-errors') });
    const input = (over: Partial<GenerateInput>): GenerateInput => ({
      weights: { version: 0, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'remote' } },
      role: 'actor',
      prompt: 'Evaluate: 12+34\n',
      params: { maxNewTokens: 8, temperature: 1, topP: 1, stop: [] },
      remote: { baseUrl, model: 'policy' },
      ...over,
    });
    const env = new MockActivityEnvironment();
    const unknown = await env.run(activities.generate, input({ remote: { baseUrl, model: 'nope' } })).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(ApplicationFailure);
    expect(unknown).toMatchObject({ type: 'RemoteEngineRequestError', nonRetryable: true, message: expect.stringMatching(/404.*`nope` does not exist/) });
    expect((unknown as ApplicationFailure).details?.[0]).toMatchObject({ problem: 'unknown-model', status: 404 });
    const overflow = await env.run(activities.generate, input({ prompt: 'Compute: 1+2+3+4+5+6+7+8+9\n'.repeat(20) })).catch((e: unknown) => e);
    expect(overflow).toMatchObject({ type: 'RemoteEngineRequestError', nonRetryable: true, message: expect.stringMatching(/maximum context length is 192/) });
    expect((overflow as ApplicationFailure).details?.[0]).toMatchObject({ problem: 'context-overflow', status: 400 });
    // A tokenizer that is not the served one (here: without the protocol's end-of-turn token) is refused
    // by the /tokenize check, naming the key to set.
    const foreign = path.join(work, 'foreign-tokenizer.json');
    const json = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'assets', 'tokenizer.json'), 'utf8')) as { added_tokens: Array<{ content: string }> };
    fs.writeFileSync(foreign, JSON.stringify({ ...json, added_tokens: json.added_tokens.filter((t) => t.content !== '<|eos|>') }));
    const noEos = await env.run(activities.generate, input({ remote: { baseUrl, model: 'policy', tokenizer: foreign } })).catch((e: unknown) => e);
    expect(noEos).toMatchObject({ type: 'RemoteEngineRequestError', nonRetryable: true, message: expect.stringMatching(/tokenizes differently from .*foreign-tokenizer\.json.*set inference\.openai\.tokenizer/) });
    // Where the two part: at the served <|eos|> (the ids before it are the same), shown with the ids around it.
    const probeIds = (noEos as ApplicationFailure).message.match(/first difference at id (\d+) \(0-based\)/);
    expect(Number(probeIds?.[1])).toBeGreaterThanOrEqual(12);
    expect((noEos as ApplicationFailure).message).toContain(`>${tok.eosId}<`);
    // The same errors from the engine itself, typed.
    await expect(new RemoteOpenAIEngine({ baseUrl, model: 'nope', tokenizer: tok }).complete('x', { maxNewTokens: 1, temperature: 1, topP: 1, stop: [] })).rejects.toBeInstanceOf(RemoteEngineRequestError);
  });

  it('labels a synced call with the weights that made it when a sync lands mid-request, and waits for a server behind the wanted version', async () => {
    const store = tempStore('vllm-straddle');
    const activities = createInferenceActivities({ store });
    const env = new MockActivityEnvironment();
    const other = sharpWeights(cfg, 12, 6);
    const otherDir = writeHfDir(path.join(work, 'sharp-other'), { config: cfg, weights: other, tokenizer: tok });
    const sharpDir = path.join(work, 'sharp');
    const otherLocal = await embedded(other, 0);
    try {
      const input = (version: number, seed: number): GenerateInput => ({
        weights: { version, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'remote' } },
        role: 'actor',
        prompt: prompts[1]!,
        params: { maxNewTokens: 64, temperature: 1, topP: 1, stop: [], seed },
        remote: { baseUrl, model: 'policy', synced: true },
      });
      // Versions 100 (weights), 101 (other), 102 (weights), …: each call wants the version served
      // when it starts, and the next sync is sent while it runs (its request finishes on the old
      // weights) or just before it (the request waits out the reload, then runs on the new ones).
      for (let v = 100; v < 108; v++) {
        const next = v + 1;
        const sync = () => reloadVllmWeights(baseUrl, next % 2 === 0 ? sharpDir : otherDir, next);
        let out: GenerateResult;
        if (v % 2 === 0) {
          const call = env.run(activities.generate, input(v, v)) as Promise<GenerateResult>;
          await new Promise((r) => setTimeout(r, 5 * (v - 99)));
          await sync();
          out = await call;
        } else {
          // Sent once the server has left v (paused, labelled "syncing", or already on next): the
          // request can only run on next's weights, and is labelled so.
          const synced = sync();
          while ((await servedWeightVersion(baseUrl)) === String(v)) await new Promise((r) => setTimeout(r, 1));
          out = (await env.run(activities.generate, input(v, v))) as GenerateResult;
          await synced;
          expect(out.weightVersion).toBe(next);
        }
        expect([v, next]).toContain(out.weightVersion);
        const c = await getJson<CompletionTokens>(store, out.tokens);
        const scorer = out.weightVersion % 2 === 0 ? local : otherLocal;
        const mine = await scorer.scoreTokens(c.promptTokenIds, c.tokenIds);
        expect(Math.max(...c.logprobs.map((lp, k) => Math.abs(lp - mine[k]!)))).toBeLessThan(1e-3);
      }
      // A server still on an older version than the call wants: a retryable failure (Temporal retries
      // it once the sync is done), never a completion labelled with weights it did not run.
      await expect(env.run(activities.generate, input(200, 1))).rejects.toThrow(/served weight version 108→108, wanted 200 or newer/);
    } finally {
      await reloadVllmWeights(baseUrl, sharpDir, 100);
      await otherLocal.release();
    }
  });
});

describe('planActJob on the vLLM server', () => {
  it('plays its episodes on the server (samples with its ids) and refuses to train a model it cannot sync', async () => {
    const ctx = await testEnv('vllm-plan-act-job');
    try {
      const config = {
        experiment: 'vllm-job',
        seed: 2,
        model: MODEL,
        rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 12 },
        rollout: { mode: 'shared' as const, maxTurns: 2 },
        inference: { engine: 'openai' as const, openai: { baseUrl, model: 'policy' } },
        timeouts: { heartbeatSec: 10 },
      };
      const handle = await ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('vllm-job'), args: [{ role: 'shared', config, train: false }] });
      const result = (await handle.result()) as PlanActJobResult;
      expect(result.rollouts[0]).toMatchObject({ outcome: 'shared', episodes: 2 });
      const planner = await readSamples(ctx.store, result.rollouts[0]!.samples.planner!.ref);
      // No ONNX exists for these weights (a label only): every generation went to the server.
      expect(planner.every((s) => s.responseTokens.length > 0 && s.metadata.weightVersion === 0)).toBe(true);
      // rollout.batchRequests 'local': the orchestration worker makes the calls to the server itself,
      // in exchanges (no generate activity); the episodes and their samples are the server's as above.
      const localJob = await ctx.env.client.workflow.start('planActJob', {
        taskQueue: TASK_QUEUES.orchestration,
        workflowId: uniqueId('vllm-job-local'),
        args: [{ role: 'shared', config: { ...config, rollout: { ...config.rollout, batchRequests: 'local' as const, episodesPerWorkflow: 2 } }, train: false }],
      });
      const local = (await localJob.result()) as PlanActJobResult;
      expect(local.rollouts[0]).toMatchObject({ outcome: 'shared', episodes: 2 });
      const localPlanner = await readSamples(ctx.store, local.rollouts[0]!.samples.planner!.ref);
      expect(localPlanner.length).toBe(planner.length);
      expect(localPlanner.every((s) => s.responseTokens.length > 0 && s.metadata.weightVersion === 0)).toBe(true);
      const events = (await ctx.env.client.workflow.getHandle(`${localJob.workflowId}/rollout-1/episodes-0`).fetchHistory()).events ?? [];
      expect(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []))).toEqual(['writeEpisodeSamples']);
      expect(events.some((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity')).toBe(true);
      const trained = await ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('vllm-train'), args: [{ role: 'shared', config }] });
      await expect(trained.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/cannot train or publish/) } });
      // weightSync means nothing to a job: refused by name rather than ignored.
      const synced = { ...config, inference: { engine: 'openai' as const, openai: { baseUrl, model: 'policy', weightSync: { dir: path.join(work, 'job-sync') } } } };
      const refused = await ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('vllm-job-sync'), args: [{ role: 'shared', config: synced, train: false }] });
      await expect(refused.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/inference\.openai\.weightSync/) } });
    } finally {
      await ctx.stop();
    }
  }, 300_000);
});

describe('trainingRun on the vLLM server', () => {
  it('trains the served policy: each step syncs the new weights into the server, and the second rollout provably used them', async () => {
    const ctx = await testEnv('vllm-training-run');
    try {
      // The untrained policy earns no reward, so every advantage is 0: the entropy bonus and a large
      // learning rate make step 1 change the weights anyway, enough to tell v0 and v1 apart on every sample.
      const config = syncedRunConfig({ steps: 2, promptsPerStep: 2, groupSize: 2, maxNewTokens: 16, learningRate: 0.02, entropyCoeff: 0.5 }, 'sync');
      const { workflowId, handle } = await ctx.startTrainingRun('vllm-run', config);
      const result = (await handle.result()) as TrainingRunResult;
      expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 1]);
      // Plan/Act episodes end to end on the server: acts, calculator calls through the tools queue.
      const rollouts = await Promise.all([1, 2].map((step) => ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${step}`).result() as Promise<RolloutSummary>));
      expect(rollouts.reduce((n, r) => n + r.metrics.tools.calls, 0)).toBeGreaterThan(0);
      for (const p of result.rl) expect(p.seconds.sync).toBeGreaterThan(0);
      // The server says it serves the version the second rollout was labelled with.
      expect(await servedWeightVersion(baseUrl)).toBe('1');
      expect(fs.existsSync(path.join(work, 'sync', encodeURIComponent(workflowId), 'v1', 'model.safetensors'))).toBe(true);

      // Step 2's samples: labelled v1, and their logprobs are those of v1's weights, not v0's.
      const summary = rollouts[1]!;
      const sets = [summary.samples.planner, summary.samples.actor].filter((s) => s !== undefined);
      const samples = (await Promise.all(sets.map((s) => readSamples(ctx.store, s.ref)))).flat();
      expect(samples.length).toBeGreaterThan(0);
      expect(samples.every((s) => s.metadata.weightVersion === 1)).toBe(true);
      const v0 = await engineOf(ctx.store, workflowId, 0);
      const v1 = await engineOf(ctx.store, workflowId, 1);
      let worstV1 = 0;
      let bestV0 = Infinity;
      for (const s of samples) {
        const [a, b] = await Promise.all([v1.scoreTokens(s.promptTokens, s.responseTokens), v0.scoreTokens(s.promptTokens, s.responseTokens)]);
        const trained = s.lossMask.flatMap((m, i) => (m === 1 ? [i] : []));
        worstV1 = Math.max(worstV1, ...trained.map((i) => Math.abs(s.logprobs[i]! - a[i]!)));
        bestV0 = Math.min(bestV0, Math.max(...trained.map((i) => Math.abs(s.logprobs[i]! - b[i]!))));
      }
      expect(worstV1).toBeLessThan(1e-3);
      expect(bestV0).toBeGreaterThan(1e-3);
      await Promise.all([v0.release(), v1.release()]);
    } finally {
      await ctx.stop();
    }
  }, 600_000);
});

describe('asynchronous trainingRun on the vLLM server (partial rollouts)', () => {
  it('a rollout in flight when newer weights are synced goes on with them: each call labelled with the version the server served, samples counted from their oldest, never more than maxStaleness behind', async () => {
    // The chosen points: step 3's rollout starts on v1 while step 2 trains. Its calls after a
    // calculator result or a planner turn (prompts of several messages) are held until the server
    // serves v2, as a slow rollout's would be; the sync of v2 is held until the episodes' first
    // calls (one message) have come back on v1. The holds only wait; the real activities run after.
    const onV1 = 1;
    const firstCallsWanted = 8; // rl.promptsPerStep × rl.groupSize episodes, each opening with a planner call
    let firstCallsDone = 0;
    const waitFor = async (ctx: Context, until: () => Promise<boolean>) => {
      while (!(await until())) {
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
        ctx.heartbeat();
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const hold: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        const ctx = Context.current();
        const type = ctx.info.activityType;
        if (type === 'syncRemoteWeights' && (input.args[0] as SyncRemoteWeightsInput).weights.version === onV1 + 1) {
          await waitFor(ctx, async () => firstCallsDone >= firstCallsWanted);
        }
        // An episode workflow sends the calls its episodes make together as one generateBatch: the
        // first calls of a rollout's episodes go together, before any later call is made.
        if (type !== 'generateBatch') return next(input);
        const calls = (input.args[0] as GenerateBatchInput).requests.filter((c) => c.weights.version === onV1);
        if (calls.length === 0) return next(input);
        if (calls.some((c) => (c.messageStarts?.length ?? 1) > 1)) {
          await waitFor(ctx, async () => Number((await servedWeightVersion(baseUrl)) ?? -1) > onV1);
          return next(input);
        }
        const out = (await next(input)) as Array<BatchOutcome<GenerateResult>>;
        firstCallsDone += out.filter((o) => 'ok' in o && o.ok.weightVersion === onV1).length;
        return out;
      },
    };
    const ctx = await testEnv('vllm-async-run', undefined, { activityInterceptors: [() => ({ inbound: hold })] });
    try {
      // Gentler steps than the synchronous test's: v1 must still plan and call the calculator.
      const config = syncedRunConfig({ steps: 3, promptsPerStep: 4, groupSize: 2, maxNewTokens: 16, learningRate: 0.002, entropyCoeff: 0.05, async: { maxStaleness: 1 } }, 'async-sync');
      const { workflowId, handle } = await ctx.startTrainingRun('vllm-async', config);
      const result = (await handle.result()) as TrainingRunResult;
      // Rollouts 1 and 2 started on v0 at step 1, rollout 3 on v1 at step 2.
      expect(result.rl.map((p) => p.weightVersion)).toEqual([0, 0, 1]);
      for (const p of result.rl) expect(Object.keys(p.schedule!.staleness).every((k) => Number(k) >= 0 && Number(k) <= 1)).toBe(true);
      expect(await servedWeightVersion(baseUrl)).toBe('2');

      const summary = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-3`).result()) as RolloutSummary;
      const sets = [summary.samples.planner, summary.samples.actor].filter((s) => s !== undefined);
      const samples = (await Promise.all(sets.map((s) => readSamples(ctx.store, s.ref)))).flat();
      const partial = samples.filter((s) => s.metadata.weightVersions !== undefined);
      // Acts that called the calculator: their first call ran on v1, the rest on v2, merged into one sample.
      expect(partial.length).toBeGreaterThan(0);
      for (const s of partial) expect(s.metadata).toMatchObject({ weightVersion: 1, weightVersions: [1, 2] });
      expect(result.rl[2]!.schedule!.partial).toBe(partial.length);
      // Counted from their oldest call: one version behind step 3's policy (v2).
      expect(result.rl[2]!.schedule!.staleness['1']).toBeGreaterThanOrEqual(partial.length);
      expect(samples.every((s) => s.metadata.weightVersion === 1 || s.metadata.weightVersion === 2)).toBe(true);

      // Every trained token's logprob is that of the weights its label names: a one-version sample
      // its version's throughout; a partial sample v1's on its first call and v2's on its last
      // (segments of trained tokens, split by the tool and context text between them).
      const v1 = await engineOf(ctx.store, workflowId, 1);
      const v2 = await engineOf(ctx.store, workflowId, 2);
      const matches = (recorded: number[], scored: number[], at: number[]) => at.every((i) => Math.abs(recorded[i]! - scored[i]!) < 1e-3);
      let lastNotV1 = 0;
      for (const s of samples) {
        const [a, b] = await Promise.all([v1.scoreTokens(s.promptTokens, s.responseTokens), v2.scoreTokens(s.promptTokens, s.responseTokens)]);
        const segments = trainedSegments(s.lossMask);
        if (!s.metadata.weightVersions) {
          expect(matches(s.logprobs, s.metadata.weightVersion === 1 ? a : b, segments.flat())).toBe(true);
          continue;
        }
        expect(segments.length).toBeGreaterThan(1);
        expect(matches(s.logprobs, a, segments[0]!)).toBe(true);
        expect(matches(s.logprobs, b, segments.at(-1)!)).toBe(true);
        if (!matches(s.logprobs, a, segments.at(-1)!)) lastNotV1 += 1;
      }
      // The weights moved between v1 and v2 enough to tell them apart.
      expect(lastNotV1).toBeGreaterThan(0);
      await Promise.all([v1.release(), v2.release()]);
    } finally {
      await ctx.stop();
    }
  }, 600_000);
});

/**
 * A trainingRun on the server with its weights synced into `work/<syncDir>`: enough SFT on one-digit
 * sums, every act through the calculator, that the policy's Plan/Act episodes on the server call it.
 */
function syncedRunConfig(rl: RunConfigInput['rl'], syncDir: string) {
  return tinyRunConfig({
    model: MODEL,
    task: { trainProblems: 200, evalProblems: 4, difficulty: { minTerms: 2, maxTerms: 2, minDigits: 1, maxDigits: 1 }, rl: { evalProblems: 4, testProblems: 0 } },
    sft: { steps: SFT_STEPS, batchSize: 16, stepsPerActivity: SFT_STEPS, warmupSteps: 5 },
    eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8, sampled: false },
    rollout: { maxTurns: 2 },
    rl,
    inference: { engine: 'openai', openai: { baseUrl, model: 'policy', weightSync: { dir: path.join(work, syncDir) } } },
  });
}

/** Runs of consecutive trained positions of a loss mask: one per model call merged into a sample. */
function trainedSegments(mask: number[]): number[][] {
  const out: number[][] = [];
  mask.forEach((m, i) => {
    if (m !== 1) return;
    if (i > 0 && mask[i - 1] === 1) out.at(-1)!.push(i);
    else out.push([i]);
  });
  return out;
}

async function engineOf(store: BlobStore, runId: string, version: number): Promise<OrtEngine> {
  const ref = await store.getName(names.weights(runId, version));
  if (!ref) throw new Error(`no weights v${version} of ${runId}`);
  return OrtEngine.create({ onnx: await store.get(ref), config: cfg, tokenizer: tok, weightVersion: version });
}
