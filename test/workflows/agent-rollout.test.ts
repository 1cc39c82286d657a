/**
 * Agent episodes through the gateway, end to end on the real dev server: agentRollout runs the
 * outside agent (official `openai` client) on the tools queue against a gateway started here, the
 * gateway records each episode's calls, and the merged samples feed a real GRPO step. The gateway's
 * engine is scripted as a trained actor behaves (a calculator call, then the result, wrong on odd
 * seeds), so episodes have two calls each and groups have reward spread. The gateway has an API
 * key: the tools worker's built-in agent reads it from DURABLE_RL_GATEWAY_API_KEY, an agent command
 * from OPENAI_API_KEY.
 */
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { MockActivityEnvironment } from '@temporalio/testing';
import { runAgentProcess } from '../../activities/agent-process';
import { GATEWAY_API_KEY_ENV } from '../../activities/agents';
import { readSamples } from '../../src/contracts/sample-set';
import { createTrainingActivities, type TrainGrpoOutput } from '../../activities/training';
import { parseRunConfig } from '../../src/config/parse';
import type { Completion, SamplingParams } from '../../src/domain/types';
import { blobStoreRecorder } from '../../src/gateway/recorder';
import { createGateway } from '../../src/gateway/server';
import { loadTokenizer } from '../../src/model/tokenizer';
import { REPO_ROOT } from '../../src/paths';
import type { AgentRolloutInput } from '../../src/contracts/rollout-inputs';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { sortedGroupRewards } from '../helpers/group-rewards';
import { testEnv, uniqueId, type TestEnv } from '../helpers/temporal';

const tokenizer = loadTokenizer();
let ctx: TestEnv;
let gateway: FastifyInstance;
let baseUrl: string;
const KEY = 'sk-agent-rollout';

/** A calculator call first; after the result, the result (or 7 on odd seeds: a wrong answer). */
const topPs: number[] = [];
async function scriptedActor(prompt: string, params: SamplingParams): Promise<Completion> {
  topPs.push(params.topP);
  const result = /<result>(.*?)<\/result>\n$/.exec(prompt)?.[1];
  const expression = /^Evaluate: (\S+)\n/.exec(prompt)![1]!;
  const text = result === undefined ? `<calc>${expression}</calc>` : (params.seed ?? 0) % 2 === 1 ? '7' : result;
  const tokenIds = [...tokenizer.encode(text), ...(result !== undefined ? [tokenizer.eosId] : [])];
  return { text, promptTokenIds: tokenizer.encode(prompt), tokenIds, logprobs: tokenIds.map(() => -0.2), entropy: tokenIds.map(() => 0), finishReason: result !== undefined ? 'eos' : 'stop' };
}

beforeAll(async () => {
  // The tools worker runs in this process: its activities read the key from here.
  process.env[GATEWAY_API_KEY_ENV] = KEY;
  ctx = await testEnv('agent-rollout');
  gateway = createGateway({ engine: { complete: scriptedActor }, tokenizer, model: 'scripted-actor', maxSeq: 192, recorder: blobStoreRecorder(ctx.store), apiKey: KEY });
  await gateway.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gateway.server.address() as AddressInfo).port}/v1`;
});

afterAll(async () => {
  await gateway?.close();
  await ctx?.stop();
  delete process.env[GATEWAY_API_KEY_ENV];
});

it('runs agent episodes through the gateway and merges each episode\'s recorded calls into one sample a GRPO step trains on', async () => {
  const config = parseRunConfig({ seed: 2, model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 24 } });
  const input: AgentRolloutInput = { runId: 'agents', rolloutId: 1, config, gateway: { baseUrl, model: 'scripted-actor', weightVersion: 0 } };
  const handle = await ctx.env.client.workflow.start('agentRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('agents'), args: [input] });
  const result = (await handle.result()) as RolloutSummary;
  expect(result.episodes).toBe(4);
  expect(result.answered).toBe(4);
  expect(result.metrics.generations).toBe(8);
  // Seeds alternate parity within each group: one right, one wrong answer per problem.
  expect(sortedGroupRewards(result.rows)).toEqual([[0, 1], [0, 1]]);
  const set = result.samples.single!;
  expect(set).toMatchObject({ samples: 4, timelines: { captured: 8, merged: 4 } });
  const samples = await readSamples(ctx.store, set.ref);
  for (const s of samples) {
    // Both model turns trained, the tool result between them not.
    const decoded = tokenizer.decode(s.responseTokens.filter((_, j) => s.lossMask[j] === 1));
    expect(decoded).toMatch(/^<calc>\S+<\/calc>-?\d+<\|eos\|>$/);
    expect(s.lossMask).toContain(0);
    expect(s.reward).toBe(result.rows.find((r) => r.episodeId === s.metadata.episodeId)!.reward);
  }

  // A training step accepts them.
  const training = createTrainingActivities({ store: ctx.store });
  const runId = uniqueId('agents-train');
  const init = await training.initPolicy({ runId, model: config.model, seed: 1 });
  const out: TrainGrpoOutput = await new MockActivityEnvironment().run(training.trainGrpo, { runId, checkpoint: init.checkpoint, samples: [set], step: 1, rl: config.rl, resetOptimizer: true });
  expect(out.rows).toBe(4);
  expect(out.checkpoint.step).toBe(1);
});

it("samples at the run's rl.topP (the gateway's top_p), as at its temperature", async () => {
  const config = parseRunConfig({ seed: 2, model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, rl: { promptsPerStep: 1, groupSize: 2, maxNewTokens: 24, topP: 0.9 } });
  const input: AgentRolloutInput = { runId: 'agents-top-p', rolloutId: 1, config, gateway: { baseUrl, model: 'scripted-actor', weightVersion: 0 } };
  topPs.length = 0;
  const result = (await ctx.env.client.workflow.execute('agentRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('agents-top-p'), args: [input] })) as RolloutSummary;
  expect(result.metrics.generations).toBe(4);
  expect(topPs).toEqual([0.9, 0.9, 0.9, 0.9]);
});

it("the default agent command passes DURABLE_RL_TOP_P on as top_p, through the official openai client", async () => {
  topPs.length = 0;
  const env = { OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: KEY, DURABLE_RL_MODEL: 'scripted-actor', DURABLE_RL_EPISODE_ID: uniqueId('agent-cmd'), DURABLE_RL_PROBLEM: '2+3', DURABLE_RL_SEED: '0' };
  const argv = [process.execPath, path.join(REPO_ROOT, 'dist', 'scripts', 'agent-episode.js')];
  const out = await runAgentProcess({ argv, cwd: REPO_ROOT, env: { ...env, DURABLE_RL_TOP_P: '0.8' }, timeoutMs: 30_000 });
  expect(out.requests).toBe(2);
  expect(topPs).toEqual([0.8, 0.8]);
  // Without it the request leaves top_p out: the gateway's default, 1.
  topPs.length = 0;
  await runAgentProcess({ argv, cwd: REPO_ROOT, env: { ...env, DURABLE_RL_EPISODE_ID: uniqueId('agent-cmd') }, timeoutMs: 30_000 });
  expect(topPs).toEqual([1, 1]);
});
