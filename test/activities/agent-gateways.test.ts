/**
 * The tools worker's gateways for rollout.kind: agent are keyed with the worker's own random key:
 * another process on the machine cannot write training data through them, and the agent command the
 * activity starts gets the key as OPENAI_API_KEY (the default agent, scripts/agent-episode.ts, through
 * the official `openai` client), so its calls are served and recorded.
 */
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import OpenAI from 'openai';
import { AgentGateways } from '../../activities/agent-gateways';
import { createAgentActivities, type AgentEpisodeResult } from '../../activities/agents';
import type { WeightsInfo } from '../../src/contracts/weights';
import { readEpisodeTimelines } from '../../src/gateway/recorder';
import { DEFAULT_GPT_CONFIG } from '../../src/model/default-config';
import { initWeights } from '../../src/model/init';
import { exportOnnx } from '../../src/model/onnx-export';
import { REPO_ROOT } from '../../src/paths';
import { tempStore } from '../helpers/store';

const config = { ...DEFAULT_GPT_CONFIG, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 96 };
const store = tempStore('agent-gateways');
let weights: WeightsInfo;

beforeAll(async () => {
  weights = { version: 0, step: 0, onnx: await store.put(exportOnnx(config, initWeights(config, 1)), 'onnx') };
});

test('a gateway refuses requests without its key and records those with it', async () => {
  const gateways = new AgentGateways(store);
  await gateways.with(weights, config.maxSeq, async (baseUrl, apiKey) => {
    expect(apiKey).toBe(gateways.apiKey);
    expect(apiKey.length).toBeGreaterThanOrEqual(32);
    expect((await fetch(`${baseUrl}/models`)).status).toBe(401);
    const ask = (key: string) => new OpenAI({ apiKey: key, baseURL: baseUrl, maxRetries: 0, defaultHeaders: { 'x-episode-id': `keyed-${key.length}` } }).chat.completions.create({ model: 'policy', messages: [{ role: 'user', content: 'Evaluate: 1+2\n' }], max_tokens: 4 });
    await expect(ask('none')).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    expect(await readEpisodeTimelines(store, 'keyed-4')).toEqual([]);
    await ask(apiKey);
    expect(await readEpisodeTimelines(store, `keyed-${apiKey.length}`)).toHaveLength(1);
  });
  // Each worker its own key.
  expect(new AgentGateways(store).apiKey).not.toBe(gateways.apiKey);
});

test('the agent command gets the key as OPENAI_API_KEY: its calls are served and recorded', async () => {
  const { runAgentCommand } = createAgentActivities({ store });
  const out: AgentEpisodeResult = await new MockActivityEnvironment().run(runAgentCommand, {
    command: [process.execPath, path.join(REPO_ROOT, 'dist', 'scripts', 'agent-episode.js')],
    timeoutSec: 60,
    weights,
    maxSeq: config.maxSeq,
    episodeId: 'keyed-agent',
    expression: '1+2',
    maxCalls: 1,
    temperature: 1,
    maxTokens: 8,
    seed: 1,
  });
  expect(out.requests).toBeGreaterThanOrEqual(1);
  expect(await readEpisodeTimelines(store, out.recordedAs)).toHaveLength(out.requests);
}, 60_000);
