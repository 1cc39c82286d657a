/**
 * Chat mode's config (task.chat, model.tokenizer; src/config/refusals.ts's chat rows, start-checks.ts): every
 * setting where chat episodes cannot work is refused naming the key; a config without them is
 * unchanged; task.chat gets model.tokenizer's name filled in for the activities.
 */
import { parseRunConfig } from '../../src/config/parse';
import { refuseConfig } from '../../src/config/refusals';
import { startProblems } from '../../src/config/start-checks';
import { problemsOf } from '../helpers/config';
import { chatmlModelDir } from '../chat/chat-models';

const chatRun = (over: Record<string, unknown> = {}) => ({
  model: { arch: 'qwen3', tokenizer: 'qwen3', dModel: 64, nHeads: 2, nKvHeads: 1 },
  trainer: { backend: 'torch' },
  task: { chat: { enableThinking: false } },
  rollout: { kind: 'standard' },
  ...over,
});

describe('chat mode config', () => {
  it('takes a Qwen3 policy over the Qwen3 tokenizer on the torch trainer, filling task.chat.tokenizer from model.tokenizer', () => {
    const cfg = parseRunConfig(chatRun());
    expect(cfg.task.chat).toEqual({ enableThinking: false, tokenizer: 'qwen3' });
    expect(startProblems(cfg)).toEqual([]);
  });

  it('leaves configs without chat keys as they were', () => {
    const cfg = parseRunConfig({ rollout: { kind: 'standard' } });
    expect(cfg.task.chat).toBeUndefined();
    expect(cfg.model.tokenizer).toBeUndefined();
    expect(JSON.stringify(cfg)).toBe(JSON.stringify(parseRunConfig({ rollout: { kind: 'standard' } })));
  });

  it.each([
    ['model.tokenizer without task.chat', chatRun({ task: {} }), 'model.tokenizer', /Plan\/Act text protocol/],
    ['task.chat without model.tokenizer', chatRun({ model: { arch: 'qwen3', dModel: 64, nHeads: 2 } }), 'task.chat', /set model\.tokenizer/],
    ['the tfjs trainer', chatRun({ model: { tokenizer: 'qwen3' }, trainer: undefined }), 'task.chat', /trainer\.backend: torch/],
    ['a GPT-2 policy over a 151k vocabulary', chatRun({ model: { tokenizer: 'qwen3' } }), 'model.tokenizer', /model\.arch: qwen3 or llama/],
    ['a Plan/Act rollout', chatRun({ rollout: { kind: 'plan-act' } }), 'rollout.kind', /rollout\.kind: standard, and agent on a synced server, so far \(this config has plan-act\)/],
    ['a tree rollout', chatRun({ rollout: { kind: 'tree' }, rl: { groupSize: 4 } }), 'rollout.kind', /standard, and agent on a synced server, so far/],
    ["an agent on the embedded engine's gateway (Plan/Act text)", chatRun({ rollout: { kind: 'agent' } }), 'inference.engine', /recording proxy .*Plan\/Act text protocol/],
    ['the RFT baseline', chatRun({ compare: { rft: true } }), 'compare.rft', /not built for chat mode/],
    ['a task.chat.tokenizer other than model.tokenizer', chatRun({ task: { chat: { tokenizer: 'elsewhere' } } }), 'task.chat.tokenizer', /model\.tokenizer's/],
  ])('refuses %s, naming the key', (_what, raw, path, message) => {
    const problems = problemsOf(() => parseRunConfig(raw));
    expect(problems).toContainEqual(expect.objectContaining({ path, message: expect.stringMatching(message) }));
  });

  it('takes an agent on a synced server (the recording proxy), and refuses one on an unsynced server where a trainingRun starts', () => {
    const synced = { engine: 'openai', openai: { baseUrl: 'http://127.0.0.1:8046/v1', model: 'policy', weightSync: { dir: '/tmp/w' } } };
    const agent = parseRunConfig(chatRun({ rollout: { kind: 'agent' }, inference: synced }));
    expect(agent.rollout.kind).toBe('agent');
    expect(() => refuseConfig(agent, 'input', { consumer: { workflow: 'trainingRun' } })).not.toThrow();
    const unsynced = parseRunConfig(chatRun({ rollout: { kind: 'agent' }, inference: { ...synced, openai: { ...synced.openai, weightSync: undefined } } }));
    expect(problemsOf(() => refuseConfig(unsynced, 'input', { consumer: { workflow: 'trainingRun' } }))).toContainEqual(expect.objectContaining({ path: 'inference.openai.weightSync' }));
  });

  it('refuses, where the run starts, a template without tool support and a directory that is not a tokenizer', () => {
    const chatml = parseRunConfig(chatRun({ model: { arch: 'qwen3', tokenizer: chatmlModelDir(), dModel: 64, nHeads: 2 } }));
    expect(startProblems(chatml)).toEqual([expect.objectContaining({ path: 'model.tokenizer', message: expect.stringMatching(/does not write the offered tools/) })]);
    const missing = parseRunConfig(chatRun({ model: { arch: 'qwen3', tokenizer: '/nonexistent/dir', dModel: 64, nHeads: 2 } }));
    expect(startProblems(missing)).toEqual([expect.objectContaining({ path: 'model.tokenizer', message: expect.stringMatching(/nonexistent/) })]);
  });
});
