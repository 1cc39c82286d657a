/**
 * The generate activity on a remote OpenAI-compatible engine: a second process runs the gateway
 * (`node dist/scripts/gateway.js`, a fresh embedded policy), and generate, given `remote`, gets its
 * completion from there — token ids and logprobs as the server returned them (vLLM conventions), the
 * end-of-sequence told apart from a stop string — with a 4xx as a non-retryable typed failure.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createInferenceActivities, type GenerateInput, type GenerateResult } from '../../activities/inference';
import type { CompletionTokens } from '../../activities/samples';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import { getJson } from '../../src/store/blob-store';
import { tempStore } from '../helpers/store';
import { testEnv, uniqueId } from '../helpers/temporal';
import { readSamples } from '../../activities/samples';
import type { PlanActJobResult } from '../../workflows/plan-act-types';
import { TASK_QUEUES } from '../../workflows/shared';

let gateway: ChildProcess;
let baseUrl: string;
const store = tempStore('remote-engine');

beforeAll(async () => {
  gateway = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'scripts', 'gateway.js'), '--port', '0'], {
    env: { ...process.env, DURABLE_RL_STORE: tempStore('remote-engine-server').root },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  baseUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    gateway.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /gateway: (http:\/\/\S+\/v1)/.exec(out);
      if (m) resolve(m[1]!);
    });
    gateway.once('exit', (code) => reject(new Error(`gateway exited (${code})`)));
  });
});

afterAll(async () => {
  const exited = new Promise((r) => gateway.once('exit', r));
  gateway.kill('SIGTERM');
  await exited;
});

const input = (over: Partial<GenerateInput> = {}): GenerateInput => ({
  // The remote server's weights are its own; these only label the samples.
  weights: { version: 0, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } },
  role: 'actor',
  prompt: 'Evaluate: 12+34\n',
  params: { maxNewTokens: 12, temperature: 1, topP: 1, stop: ['</calc>'], seed: 3 },
  remote: { baseUrl, model: 'durable-rl' },
  ...over,
});

test('generates on the remote server with its token ids and logprobs, reproducibly by seed', async () => {
  const activities = createInferenceActivities({ store });
  const env = new MockActivityEnvironment();
  const a: GenerateResult = await env.run(activities.generate, input());
  const b: GenerateResult = await env.run(activities.generate, input());
  const tokens = await getJson<CompletionTokens>(store, a.tokens);
  expect(tokens.promptTokenIds).toEqual(loadTokenizer().encode('Evaluate: 12+34\n'));
  expect(tokens.tokenIds.length).toBe(a.responseTokens);
  expect(tokens.logprobs.every((lp) => lp < 0)).toBe(true);
  expect(['eos', 'stop', 'length']).toContain(a.finishReason);
  // The server's sampling is seeded: the same request gives the same tokens.
  expect((await getJson<CompletionTokens>(store, b.tokens)).tokenIds).toEqual(tokens.tokenIds);
  // Straight from the server, for comparison: the activity kept exactly its ids.
  const direct = (await (
    await fetch(`${baseUrl}/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'durable-rl', prompt: 'Evaluate: 12+34\n', max_tokens: 12, stop: ['</calc>'], seed: 3, return_token_ids: true }) })
  ).json()) as { choices: Array<{ token_ids: number[] }> };
  expect(direct.choices[0]!.token_ids).toEqual(tokens.tokenIds);
});

test('an unknown model is a non-retryable RemoteEngineRequestError', async () => {
  const activities = createInferenceActivities({ store });
  const err = await new MockActivityEnvironment().run(activities.generate, input({ remote: { baseUrl, model: 'nope' } })).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: 'RemoteEngineRequestError', nonRetryable: true, message: expect.stringMatching(/404.*'nope' does not exist/) });
});

test('a planActJob with inference.engine openai plays its episodes on the remote server and refuses to train it', async () => {
  const ctx = await testEnv('remote-engine-job');
  try {
    const config = {
      experiment: 'remote-job',
      seed: 2,
      rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 12 },
      rollout: { mode: 'shared' as const, maxTurns: 2 },
      inference: { engine: 'openai' as const, openai: { baseUrl, model: 'durable-rl' } },
      timeouts: { heartbeatSec: 10 },
    };
    const handle = await ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('remote-job'), args: [{ role: 'shared', config, train: false }] });
    const result = (await handle.result()) as PlanActJobResult;
    expect(result.rollouts[0]).toMatchObject({ outcome: 'shared', episodes: 2 });
    const planner = await readSamples(ctx.store, result.rollouts[0]!.samples.planner!.ref);
    expect(planner.every((s) => s.responseTokens.length > 0 && s.metadata.weightVersion === 0)).toBe(true);
    // The job holds only a label for weights (no ONNX in the store): had any generate gone to the
    // embedded engine it would have failed to load; they all went to the remote server.
    // A job that would train the remote model is refused.
    const trained = await ctx.env.client.workflow.start('planActJob', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('remote-train'), args: [{ role: 'shared', config }] });
    await expect(trained.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/cannot train or publish/) } });
  } finally {
    await ctx.stop();
  }
}, 120_000);
