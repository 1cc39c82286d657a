/**
 * Chat mode's config (task.chat, model.tokenizer; src/config/refusals.ts's chat rows, start-checks.ts): every
 * setting where chat episodes cannot work is refused naming the key; a config without them is
 * unchanged; task.chat gets model.tokenizer's name filled in for the activities.
 */
import { parseRunConfig } from '../../src/config/parse';
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
    ['a Plan/Act rollout', chatRun({ rollout: { kind: 'plan-act' } }), 'rollout.kind', /rollout\.kind: standard so far/],
    ['a tree rollout', chatRun({ rollout: { kind: 'tree' }, rl: { groupSize: 4 } }), 'rollout.kind', /standard so far/],
    ['the RFT baseline', chatRun({ compare: { rft: true } }), 'compare.rft', /not built for chat mode/],
    ['a task.chat.tokenizer other than model.tokenizer', chatRun({ task: { chat: { tokenizer: 'elsewhere' } } }), 'task.chat.tokenizer', /model\.tokenizer's/],
  ])('refuses %s, naming the key', (_what, raw, path, message) => {
    const problems = problemsOf(() => parseRunConfig(raw));
    expect(problems).toContainEqual(expect.objectContaining({ path, message: expect.stringMatching(message) }));
  });

  it('refuses, where the run starts, a template without tool support and a directory that is not a tokenizer', () => {
    const chatml = parseRunConfig(chatRun({ model: { arch: 'qwen3', tokenizer: chatmlModelDir(), dModel: 64, nHeads: 2 } }));
    expect(startProblems(chatml)).toEqual([expect.objectContaining({ path: 'model.tokenizer', message: expect.stringMatching(/does not write the offered tools/) })]);
    const missing = parseRunConfig(chatRun({ model: { arch: 'qwen3', tokenizer: '/nonexistent/dir', dModel: 64, nHeads: 2 } }));
    expect(startProblems(missing)).toEqual([expect.objectContaining({ path: 'model.tokenizer', message: expect.stringMatching(/nonexistent/) })]);
  });
});
