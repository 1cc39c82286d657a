/**
 * rollout.kind agent on a real model (issue 38): agentRollout with a synced remote server runs the
 * default agent command (scripts/agent-episode.ts, the official `openai` client with tools=[calc], in
 * its chat format) against the tools worker's recording proxy in front of a real vLLM serving a random
 * Qwen3ForCausalLM over the REAL Qwen3 tokenizer and chat template, with vLLM's Hermes tool parser
 * (`--enable-auto-tool-choice --tool-call-parser hermes`). The proxy records each call's ids and
 * logprobs, each episode's calls merge into one sample, the samples are labelled with the weight
 * version the server says it served, and the torch trainer's GRPO update trains on them.
 *
 * A random model writes no tool calls: test/fixtures/vllm_plugins/calc_actor.py makes it answer as a
 * trained actor would (a calculator call, then a line of thinking and the result, off by one on odd
 * seeds), forcing the tokenizer's ids after vLLM took its raw logprobs, so the logprobs are the
 * model's own and the trainer's must equal them.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createAgentActivities, type RunAgentCommandInput } from '../../activities/agents';
import { readSamples } from '../../src/contracts/sample-set';
import { freePort } from '../../scripts/lib/dev-server';
import { QWEN3_TOKENIZER_DIR, writeNewModel } from '../../scripts/lib/new-model';
import { pythonBin } from '../../scripts/lib/python-env';
import { TORCH_PACKAGE_DIR } from '../../scripts/lib/torch-worker';
import { startVllm, type RunningVllm } from '../../scripts/lib/vllm-server';
import { parseRunConfig } from '../../src/config/parse';
import type { AgentRolloutInput } from '../../src/contracts/rollout-inputs';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { WeightsInfo } from '../../src/contracts/weights';
import type { Sample } from '../../src/domain/types';
import { readEpisodeTimelines } from '../../src/gateway/recorder';
import { loadChatModel } from '../../src/chat';
import { resolveTokenizerDir } from '../../src/model/tokenizer-dir';
import { calc, CHAT_TOOLS, chatDemonstration, chatProblemMessages, problemFromExpression } from '../../src/tasks/arith';
import { chatConversationOptions } from '../../activities/chat-episodes';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { sortedGroupRewards } from '../helpers/group-rewards';
import { testEnv, tinyRunConfig, uniqueId, type TestEnv } from '../helpers/temporal';

const FIXTURES = path.join(__dirname, '..', 'fixtures');
const MODEL = 'qwen3-policy';
const SERVED_VERSION = 3;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-vllm-proxy-'));
let modelDir: string;
let vllm: RunningVllm;
let ctx: TestEnv;

/** Weights of version `version` that a synced server serves (nothing of them is read here). */
const weightsOf = (version: number): WeightsInfo => ({ version, step: 0 });
const remote = () => ({ baseUrl: `${vllm.baseUrl}/v1`, model: MODEL, synced: true });
const AGENT_COMMAND = ['node', 'dist/scripts/agent-episode.js'];

async function vllmPost<T>(route: string, body: unknown): Promise<T> {
  const res = await fetch(`${vllm.baseUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** vLLM's own ids for a text, and for a conversation rendered by its chat template with the generation prompt. */
const tokenize = async (text: string) => (await vllmPost<{ tokens: number[] }>('/tokenize', { model: MODEL, prompt: text, add_special_tokens: false })).tokens;
const renderPrompt = async (messages: unknown[]) => (await vllmPost<{ tokens: number[] }>('/tokenize', { model: MODEL, messages, tools: CHAT_TOOLS, add_generation_prompt: true })).tokens;

/**
 * A fixture script's JSON answer. Asynchronous: a synchronous child would block the event loop for
 * seconds, and the next request would go out on a pooled socket vLLM closed meanwhile.
 */
async function python<T>(script: string, input: unknown): Promise<T> {
  const run = promisify(execFile)(pythonBin(), [path.join(FIXTURES, script)], { env: { ...process.env, PYTHONPATH: TORCH_PACKAGE_DIR, TRANSFORMERS_VERBOSITY: 'error' }, maxBuffer: 64 << 20 });
  run.child.stdin!.end(JSON.stringify(input));
  return JSON.parse((await run).stdout) as T;
}

beforeAll(async () => {
  // vLLM's CPU attention needs head sizes of 32 and up; the 151,669-id vocabulary is most of the weights.
  modelDir = writeNewModel({ arch: 'qwen3', dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxSeq: 1024 } as Parameters<typeof writeNewModel>[0], 1, path.join(work, 'qwen3'), QWEN3_TOKENIZER_DIR);
  [vllm, ctx] = await Promise.all([
    startVllm({
      model: modelDir, port: await freePort(), servedModelName: MODEL, logFile: path.join(work, 'vllm.log'),
      extraArgs: ['--logprobs-mode', 'raw_logprobs', '--enable-auto-tool-choice', '--tool-call-parser', 'hermes', '--logits-processors', 'calc_actor:CalcActor'],
      env: { PYTHONPATH: path.join(FIXTURES, 'vllm_plugins') },
    }),
    testEnv('agent-vllm-proxy', ['orchestration', 'tools']),
  ]);
  // As a sync labels it (src/engine/vllm-weights.ts reloadVllmWeights), without reloading anything.
  await vllmPost('/update_weight_version', { new_version: String(SERVED_VERSION) });
}, 300_000);

afterAll(async () => {
  await ctx?.stop();
  await vllm?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

it("plays the default agent through the tools worker's recording proxy on vLLM: one sample per episode of exactly vLLM's ids and logprobs, labelled with the served version, trained by a GRPO step", async () => {
  const config = parseRunConfig({ seed: 2, rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 64, temperature: 1, learningRate: 0.001, ppoEpochs: 1, miniBatches: 1 }, rollout: { kind: 'agent', maxToolCallsPerAct: 2, agent: { timeoutSec: 60 } } });
  // The rollout's weights are version 2; the server serves 3 (an asynchronous run's newer weights would be accepted the same way).
  const input: AgentRolloutInput = { runId: 'agents-vllm', rolloutId: 1, config, agent: { command: AGENT_COMMAND, timeoutSec: 60, weights: weightsOf(SERVED_VERSION - 1), remote: remote() } };
  const result = (await ctx.env.client.workflow.execute('agentRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('agents-vllm'), args: [input] })) as RolloutSummary;
  expect(result.rows.map((r) => r.failure)).toEqual([undefined, undefined, undefined, undefined]);
  expect(result.metrics.generations).toBe(8);
  // The agent read the answer after the model's thinking: right on even seeds, one off on odd ones, so each group has both.
  expect(sortedGroupRewards(result.rows)).toEqual([[0, 1], [0, 1]]);

  const set = result.samples.single!;
  expect(set).toMatchObject({ samples: 4, timelines: { captured: 8, merged: 4 } });
  const samples = await readSamples(ctx.store, set.ref);
  for (const s of samples) {
    expect(s.metadata.weightVersion).toBe(SERVED_VERSION);
    const row = result.rows.find((r) => r.episodeId === s.metadata.episodeId)!;
    expect(s.reward).toBe(row.reward);
    // What vLLM saw, rendered by vLLM itself: the question, the tool call the model wrote, its result, then the answer turn.
    const question = chatProblemMessages(row.expression);
    const call = `<tool_call>\n{"name": "calc", "arguments": {"expression": "${row.expression}"}}\n</tool_call><|im_end|>`;
    const timelines = await readEpisodeTimelines(ctx.store, `${row.episodeId}#a1`);
    expect(timelines).toHaveLength(2);
    const value = calc(row.expression);
    const answer = `<think>\nThe calculator says ${value}.\n</think>\n\n${row.reward === 1 ? value : String(Number(value) + 1)}<|im_end|>`;
    const firstPrompt = await renderPrompt(question);
    const callIds = await tokenize(call);
    const secondPrompt = await renderPrompt([
      ...question,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'calc', arguments: `{"expression": "${row.expression}"}` } }] },
      { role: 'tool', tool_call_id: 'call_0', content: value },
    ]);
    const answerIds = await tokenize(answer);
    const ids = [...s.promptTokens, ...s.responseTokens];
    expect(ids).toEqual([...secondPrompt, ...answerIds]);
    expect(secondPrompt.slice(0, firstPrompt.length + callIds.length)).toEqual([...firstPrompt, ...callIds]);
    // The model's two turns trained, nothing else.
    const mask = ids.map((_, j) => (j >= firstPrompt.length && j < firstPrompt.length + callIds.length) || j >= secondPrompt.length ? 1 : 0);
    expect(s.lossMask).toEqual(mask.slice(s.promptTokens.length));
  }

  // The torch trainer's GRPO update on the samples: its logprobs on the trained tokens equal vLLM's, and the update moves them.
  const trained = (s: Sample) => s.logprobs.filter((_, j) => s.lossMask[j] === 1);
  const out = await python<{ numbers: Record<string, number>; before: number[][]; after: number[][] }>('grpo_step_hf.py', { model: modelDir, samples, rl: config.rl });
  let worst = 0;
  samples.forEach((s, i) => trained(s).forEach((lp, k) => (worst = Math.max(worst, Math.abs(lp - out.before[i]![k]!)))));
  expect(worst).toBeLessThan(1e-3);
  expect(out.numbers).toMatchObject({ rows: 4, groups: 2, flatGroups: 0, optimizerSteps: 1, nonFiniteGradSteps: 0 });
  expect(out.numbers.gradNorm).toBeGreaterThan(0);
  const moved = samples.map((_, i) => Math.max(...out.after[i]!.map((lp, k) => Math.abs(lp - out.before[i]![k]!))));
  expect(Math.min(...moved)).toBeGreaterThan(1e-4);
  console.log(`agent-vllm-proxy: ${samples.length} samples, ${samples.reduce((n, s) => n + trained(s).length, 0)} trained tokens, worst |trainer − vLLM| logprob ${worst.toExponential(2)}, GRPO gradNorm ${out.numbers.gradNorm!.toFixed(4)}`);
}, 150_000);

it("in chat mode plays the episode chat SFT taught: vLLM's ids for the agent's first call are a demonstration's first prompt and tool call, its answers scored as the chat evaluation reads them", async () => {
  const synced = { engine: 'openai', openai: { baseUrl: remote().baseUrl, model: MODEL, weightSync: { dir: path.join(work, 'sync') } } };
  const config = parseRunConfig({
    seed: 3,
    model: { arch: 'qwen3', tokenizer: 'qwen3', dModel: 64, nLayers: 1, nHeads: 2, dFf: 128, maxSeq: 1024 },
    trainer: { backend: 'torch' },
    task: { chat: { enableThinking: false } },
    rl: { promptsPerStep: 2, groupSize: 2, maxNewTokens: 64, temperature: 1 },
    rollout: { kind: 'agent', maxToolCallsPerAct: 2, agent: { timeoutSec: 60 } },
    inference: synced,
  });
  const input: AgentRolloutInput = { runId: 'agents-vllm-chat', rolloutId: 1, config, agent: { command: AGENT_COMMAND, timeoutSec: 60, weights: weightsOf(SERVED_VERSION), remote: remote() } };
  const result = (await ctx.env.client.workflow.execute('agentRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('agents-vllm-chat'), args: [input] })) as RolloutSummary;
  expect(result.rows.map((r) => r.failure)).toEqual([undefined, undefined, undefined, undefined]);
  // The answers came after a line of thinking ("<think>...</think>\n\n81"): right on even seeds, one off on odd ones.
  expect(sortedGroupRewards(result.rows)).toEqual([[0, 1], [0, 1]]);

  // With enable_thinking false Qwen3's generation prompt holds an empty think block that a
  // re-rendered history drops (docs/gateway.md); the proxy keeps the agent's conversation
  // token-in/token-out with the run's tokenizer instead, so each episode's two calls are one sample.
  const set = result.samples.single!;
  expect(set).toMatchObject({ samples: 4, timelines: { captured: 8, merged: 4 } });
  const samples = await readSamples(ctx.store, set.ref);
  const model = loadChatModel(resolveTokenizerDir('qwen3'));
  const opts = chatConversationOptions({ enableThinking: false });
  for (const row of result.rows) {
    const demo = chatDemonstration(problemFromExpression(row.expression), model, opts, 1);
    expect(demo.usesTool).toBe(true);
    const firstModel = demo.lossMask.indexOf(1);
    const afterCall = demo.lossMask.indexOf(0, firstModel);
    const secondModel = demo.lossMask.indexOf(1, afterCall);
    const mine = samples.filter((x) => x.metadata.episodeId === row.episodeId);
    expect(mine).toHaveLength(1);
    const s = mine[0]!;
    // vLLM's render of the agent's first request is the demonstration's first prompt; after it, the
    // ids the server saw are the demonstration's up to its answer, token for token: the tool call
    // the model wrote (trained), the tool message as the same String(value) and the next generation
    // prompt, its empty think block included (not trained).
    expect(s.promptTokens).toEqual(demo.tokens.slice(0, firstModel));
    expect([...s.promptTokens, ...s.responseTokens].slice(0, secondModel)).toEqual(demo.tokens.slice(0, secondModel));
    expect(s.lossMask.slice(0, secondModel - firstModel).map(Boolean)).toEqual(demo.lossMask.slice(firstModel, secondModel).map(Boolean));
    expect(model.tokenizer.decode(demo.tokens.slice(0, secondModel))).toContain(`<tool_response>\n${calc(row.expression)}\n</tool_response>`);
  }
}, 150_000);

it('refuses to play an episode on a server that does not yet serve the wanted weights, naming both versions', async () => {
  const activities = createAgentActivities({ store: ctx.store });
  const input: RunAgentCommandInput = {
    command: AGENT_COMMAND, timeoutSec: 60, weights: weightsOf(SERVED_VERSION + 1), maxSeq: 1024, remote: remote(),
    episodeId: uniqueId('ahead'), expression: '2+3', maxCalls: 2, temperature: 1, maxTokens: 64, seed: 0,
  };
  await expect(new MockActivityEnvironment().run(activities.runAgentCommand, input)).rejects.toThrow(`serves weight version ${SERVED_VERSION}, wanted ${SERVED_VERSION + 1} or newer`);
  // Nothing was played: no call was recorded.
  expect(await readEpisodeTimelines(ctx.store, `${input.episodeId}#a1`)).toEqual([]);
});

it('refuses asynchronous RL for agents on a synced server, naming rl.async.maxStaleness, before anything runs', async () => {
  const config = tinyRunConfig({
    rl: { steps: 1, promptsPerStep: 2, groupSize: 2, async: { maxStaleness: 1 } },
    rollout: { kind: 'agent' },
    inference: { engine: 'openai', openai: { baseUrl: `${vllm.baseUrl}/v1`, model: MODEL, weightSync: { dir: path.join(work, 'sync') } } },
  });
  const { handle } = await ctx.startTrainingRun('agent-async', config);
  const cause = ((await handle.result().catch((e: unknown) => e)) as WorkflowFailedError).cause as ApplicationFailure;
  expect(cause.type).toBe('ConfigError');
  expect(cause.message).toMatch(/rl\.async\.maxStaleness: an agent episode on a synced server/);
  expect(await scheduledActivities(handle)).toEqual(['resolveRunConfig']);
});

async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  return ((await handle.fetchHistory()).events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}
