import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadRunConfig } from '../../src/config/load';
import { parseRunConfig } from '../../src/config/parse';
import { ConfigError } from '../../src/config/errors';
import { problemsOf } from '../helpers/config';

describe('run config', () => {
  it('fills every default from an empty object', () => {
    const cfg = parseRunConfig({});
    expect(cfg.rollout.rolloutTimeoutSec).toBe(1800);
    expect(cfg.rollout.fallbackOnTimeout).toBe(true);
    expect(cfg.task.difficulty.operators).toEqual(['+']);
    expect(cfg.task.rl.evalProblems).toBe(256);
    expect(cfg.compare.moreSft).toBe(false);
  });

  it.each([
    [{ tree: { beamSize: 3 } }, 'tree', /take effect with rollout\.kind: tree/],
    [{ horizon: {} }, 'horizon', /take effect with task\.kind: grid/],
    [{ inference: { engine: 'openai' } }, 'inference.openai', /needs inference\.openai/],
    [{ inference: { openai: { baseUrl: 'http://127.0.0.1:8000/v1', model: 'm' } } }, 'inference.openai', /takes effect with inference\.engine: openai/],
    [{ inference: { maxBatch: 8 } }, 'inference.maxBatch', /not available yet/],
    [{ inference: { engine: 'openai', openai: { model: 'x' } } }, 'inference.openai.baseUrl', /expected string|Invalid/],
  ])('rejects a key that is not implemented yet, naming it: %j', (raw, field, message) => {
    expect(problemsOf(() => parseRunConfig(raw))).toEqual([expect.objectContaining({ path: field, message: expect.stringMatching(message) })]);
  });

  it('takes rollout.kind standard (the single-agent rollout)', () => {
    expect(parseRunConfig({ rollout: { kind: 'standard' } }).rollout.kind).toBe('standard');
  });

  it('takes rollout.kind tree with its tree.* keys', () => {
    const cfg = parseRunConfig({ rollout: { kind: 'tree' }, rl: { promptsPerStep: 2, groupSize: 4 }, tree: { beamSize: 3, initialRollouts: [1, 2] } });
    expect(cfg.rollout.kind).toBe('tree');
    expect(cfg.tree).toEqual({ initialRollouts: [1, 2], expansionIterations: 2, expansionsPerIteration: 1, beamSize: 3, samplesPerRoot: 4, nodeSampling: 'entropy', maxToolCallsPerNode: 2, segmentTokens: 0, expandFromRoot: true, advantage: 'grpo' });
    // A complete config (as a workflow records it) parses to itself.
    expect(parseRunConfig(JSON.parse(JSON.stringify(cfg)))).toEqual(cfg);
    expect(parseRunConfig(JSON.parse(JSON.stringify(parseRunConfig({}))))).toEqual(parseRunConfig({}));
    expect(problemsOf(() => parseRunConfig({ rollout: { kind: 'tree' }, tree: { nodeSampling: 'greedy' } }))[0]!.path).toBe('tree.nodeSampling');
    // The group is the root's outputs: rl.groupSize must say the same, not silently differ.
    expect(problemsOf(() => parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 8 } }))[0]).toEqual(
      expect.objectContaining({ path: 'rl.groupSize', message: expect.stringMatching(/set rl\.groupSize to 4/) }),
    );
    expect(problemsOf(() => parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 4 }, tree: { initialRollouts: [1, 2] } }))[0]).toEqual(
      expect.objectContaining({ path: 'tree.initialRollouts', message: expect.stringMatching(/2 given, rl\.promptsPerStep is 8/) }),
    );
    // Segments as long as a whole turn would never split one: rejected rather than silently inert.
    expect(parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 4, maxNewTokens: 32 }, tree: { segmentTokens: 8 } }).tree.segmentTokens).toBe(8);
    expect(problemsOf(() => parseRunConfig({ rollout: { kind: 'tree' }, rl: { groupSize: 4, maxNewTokens: 32 }, tree: { segmentTokens: 32 } }))[0]).toEqual(
      expect.objectContaining({ path: 'tree.segmentTokens', message: expect.stringMatching(/rl\.maxNewTokens = 32/) }),
    );
  });

  it('takes the grid world with its horizon keys and rejects keys a grid run would ignore, by name', () => {
    const grid = { task: { kind: 'grid' as const }, rollout: { kind: 'horizon' as const } };
    const cfg = parseRunConfig(grid);
    expect(cfg.task.grid).toEqual({ rows: 5, cols: 5, walls: 4, maxSteps: 16, testLayouts: 100 });
    expect(cfg.horizon).toEqual({ actionHorizonsPattern: [5, 10, 15], numActionChunks: 5, baseH: 5, usePlanReward: false, planRewardCoef: 0.1, groupBy: 'layout' });
    expect(parseRunConfig({ ...grid, rl: { groupSize: 6 }, horizon: { groupBy: 'layout-horizon' } }).horizon!.groupBy).toBe('layout-horizon');
    // Arithmetic configs carry neither.
    expect(parseRunConfig({}).horizon).toBeUndefined();
    expect(parseRunConfig(JSON.parse(JSON.stringify(cfg)))).toEqual(cfg);
    const path = (input: unknown) => problemsOf(() => parseRunConfig(input))[0]!.path;
    expect(path({ horizon: { baseH: 3 } })).toBe('horizon');
    expect(path({ task: { grid: {} } })).toBe('task.grid');
    expect(path({ rollout: { kind: 'horizon' } })).toBe('rollout.kind');
    expect(path({ task: { kind: 'grid' } })).toBe('rollout.kind');
    expect(path({ ...grid, task: { kind: 'grid', demoToolUseRate: 0.5 } })).toBe('task.demoToolUseRate');
    expect(path({ ...grid, rollout: { kind: 'horizon', maxTurns: 2 } })).toBe('rollout.maxTurns');
    expect(path({ ...grid, rl: { maxNewTokens: 20 } })).toBe('rl.maxNewTokens');
    expect(path({ ...grid, eval: { maxNewTokens: 20 } })).toBe('eval.maxNewTokens');
    expect(path({ ...grid, rl: { dynamicSampling: { enabled: true } } })).toBe('rl.dynamicSampling.enabled');
    expect(path({ ...grid, timeline: { merge: false } })).toBe('timeline');
    expect(path({ ...grid, horizon: { actionHorizonsPattern: [] } })).toBe('horizon.actionHorizonsPattern');
    expect(path({ ...grid, horizon: { numActionChunks: 0 } })).toBe('horizon.numActionChunks');
    expect(path({ ...grid, horizon: { usePlanReward: 'yes' } })).toBe('horizon.usePlanReward');
    expect(path({ ...grid, task: { kind: 'grid', grid: { rows: 2, cols: 2, walls: 3 } } })).toBe('task.grid.walls');
    expect(path({ ...grid, model: { maxSeq: 32 } })).toBe('model.maxSeq');
    // A 3x3 grid with one wall has a few dozen held-out layouts, halved into validation and test: asking for more is refused before any training.
    const small = { rows: 3, cols: 3, walls: 1, maxSteps: 8 };
    expect(path({ ...grid, task: { kind: 'grid', grid: { ...small, testLayouts: 10 }, evalProblems: 64 } })).toBe('task.evalProblems');
    expect(path({ ...grid, task: { kind: 'grid', grid: { ...small, testLayouts: 100 }, evalProblems: 10 } })).toBe('task.grid.testLayouts');
    expect(parseRunConfig({ ...grid, task: { kind: 'grid', grid: { ...small, testLayouts: 10 }, evalProblems: 10 } }).task.grid!.testLayouts).toBe(10);
    // Four episodes a layout over three horizons leave some (layout, H) group with one episode.
    expect(path({ ...grid, rl: { groupSize: 4 }, horizon: { groupBy: 'layout-horizon' } })).toBe('horizon.groupBy');
    // Per-H groups with std-normalised advantages cancel the plan reward's factor: rejected, not ignored.
    expect(path({ ...grid, rl: { groupSize: 6 }, horizon: { groupBy: 'layout-horizon', usePlanReward: true } })).toBe('horizon.usePlanReward');
    expect(parseRunConfig({ ...grid, rl: { groupSize: 6, normAdvByStd: false }, horizon: { groupBy: 'layout-horizon', usePlanReward: true } }).horizon!.usePlanReward).toBe(true);
    expect(parseRunConfig({ ...grid, horizon: { usePlanReward: true } }).horizon!.usePlanReward).toBe(true);
  });

  it('takes the timeline keys with AgentJet\'s defaults and rejects bad ones by name', () => {
    expect(parseRunConfig({}).timeline).toEqual({ merge: true, compareBy: 'text', ignoreTools: true, fixRetokenizationDrift: true, snapDetection: false });
    expect(parseRunConfig({ timeline: { compareBy: 'token', snapDetection: true } }).timeline).toMatchObject({ compareBy: 'token', snapDetection: true });
    expect(problemsOf(() => parseRunConfig({ timeline: { compareBy: 'bytes' } }))[0]).toEqual(expect.objectContaining({ path: 'timeline.compareBy', message: expect.stringMatching(/text.*token/) }));
    expect(problemsOf(() => parseRunConfig({ timeline: { fixDrift: true } }))[0]!.message).toMatch(/fixDrift/);
  });

  it('names the field and what is allowed for a wrong type', () => {
    const problems = problemsOf(() => parseRunConfig({ sft: { steps: 'many' } }));
    expect(problems).toEqual([expect.objectContaining({ path: 'sft.steps', message: expect.stringMatching(/number/) })]);
  });

  it('rejects unknown keys instead of ignoring typos', () => {
    const problems = problemsOf(() => parseRunConfig({ rollout: { maxTurn: 3 } }));
    expect(problems[0]!.path).toBe('rollout');
    expect(problems[0]!.message).toMatch(/maxTurn/);
  });

  it('rejects an enum value and lists the allowed ones', () => {
    const problems = problemsOf(() => parseRunConfig({ rollout: { mode: 'triple' } }));
    expect(problems[0]).toEqual(expect.objectContaining({ path: 'rollout.mode', message: expect.stringMatching(/shared.*dual/) }));
  });

  it('checks cross-field rules', () => {
    expect(problemsOf(() => parseRunConfig({ model: { dModel: 30, nHeads: 4 } }))[0]!.path).toBe('model.nHeads');
    expect(problemsOf(() => parseRunConfig({ task: { difficulty: { minTerms: 4, maxTerms: 2 } } }))[0]!.path).toBe('task.difficulty.minTerms');
  });

  it('reports every problem at once', () => {
    const problems = problemsOf(() => parseRunConfig({ seed: -1, experiment: 'has space', sft: { batchSize: 0 } }));
    expect(problems.map((p) => p.path).sort()).toEqual(['experiment', 'seed', 'sft.batchSize']);
  });

  it('loads YAML and JSON files and names the file in errors', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-'));
    fs.writeFileSync(path.join(dir, 'a.yaml'), 'experiment: y1\nsft: { steps: 3 }\n');
    fs.writeFileSync(path.join(dir, 'b.json'), '{"experiment": "j1"}');
    fs.writeFileSync(path.join(dir, 'bad.yaml'), 'sft: [unclosed\n');
    expect(loadRunConfig(path.join(dir, 'a.yaml')).sft.steps).toBe(3);
    expect(loadRunConfig(path.join(dir, 'b.json')).experiment).toBe('j1');
    expect(() => loadRunConfig(path.join(dir, 'bad.yaml'))).toThrow(/bad\.yaml[\s\S]*not valid YAML/);
    expect(() => loadRunConfig(path.join(dir, 'missing.yaml'))).toThrow(/cannot read file/);
  });

  it('refuses a file that budgets the SFT baselines without asking for one (compare.sftBudget)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cfg-'));
    fs.writeFileSync(path.join(dir, 'unused.yaml'), 'compare: { rft: true, sftBudget: { sequences: 640 } }\n');
    fs.writeFileSync(path.join(dir, 'used.yaml'), 'compare: { filteredSft: true, sftBudget: { sequences: 640 } }\n');
    expect(problemsOf(() => loadRunConfig(path.join(dir, 'unused.yaml')))).toEqual([{ path: 'compare.sftBudget', message: expect.stringMatching(/compare\.moreSft, compare\.filteredSft/) }]);
    expect(loadRunConfig(path.join(dir, 'used.yaml')).compare.sftBudget).toEqual({ sequences: 640 });
  });

  it('gives RFT a learning rate of its own only when RFT runs (compare.rftLearningRate)', () => {
    expect(parseRunConfig({ compare: { rft: true, rftLearningRate: 1e-4 } }).compare.rftLearningRate).toBe(1e-4);
    expect(parseRunConfig({ compare: { rft: true } }).compare.rftLearningRate).toBeUndefined();
    expect(problemsOf(() => parseRunConfig({ compare: { rftLearningRate: 1e-4 } }))).toEqual([{ path: 'compare.rftLearningRate', message: expect.stringMatching(/compare\.rft\b/) }]);
    expect(problemsOf(() => parseRunConfig({ compare: { rft: true, rftLearningRate: 0 } }))).toEqual([{ path: 'compare.rftLearningRate', message: expect.any(String) }]);
  });

  it('accepts every example config in configs/', () => {
    const dir = path.resolve(__dirname, '../../configs');
    const files = fs.readdirSync(dir).filter((f) => /\.(ya?ml|json)$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(() => loadRunConfig(path.join(dir, f))).not.toThrow();
  });

  it("keeps the chat agent variant to qwen3-chat.yaml, differing only in its rollout's agent and the experiment's name", () => {
    const load = (f: string) => loadRunConfig(path.resolve(__dirname, '../../configs', f));
    const chat = load('qwen3-chat.yaml');
    const agent = load('qwen3-chat-agent.yaml');
    expect(agent.rollout.kind).toBe('agent');
    expect(agent.rollout.agent?.command).toEqual(['node', 'dist/scripts/agent-episode.js']);
    // The agent's calls per episode match the chat episodes' model turns (a call, then the answer).
    expect(agent.rollout.maxToolCallsPerAct + 1).toBe(chat.rollout.maxTurns);
    const { rollout: agentRollout, experiment: _a, ...agentRest } = agent;
    const { rollout: chatRollout, experiment: _c, ...chatRest } = chat;
    expect(agentRest).toEqual(chatRest);
    expect({ ...agentRollout, kind: chatRollout.kind, agent: chatRollout.agent, maxToolCallsPerAct: chatRollout.maxToolCallsPerAct }).toEqual(chatRollout);
  });

  it("keeps the grid from-run configs to grid-horizons.yaml's RL, differing only where the README says", () => {
    const load = (f: string) => loadRunConfig(path.resolve(__dirname, '../../configs', f));
    const full = load('grid-horizons.yaml');
    const rl = load('grid-rl-from-run.yaml');
    const layoutGroups = load('grid-layout-groups-from-run.yaml');
    const planReward = load('grid-plan-reward-from-run.yaml');
    // The RL of the full config, from its step-400 checkpoint, with the more-SFT baseline's SFT settings.
    for (const key of ['task', 'horizon', 'model', 'rl', 'rollout', 'eval', 'compare'] as const) expect(rl[key]).toEqual(full[key]);
    expect({ ...rl.sft, steps: full.sft.steps }).toEqual(full.sft);
    expect(rl.init).toMatchObject({ step: full.sft.steps });
    // The design's groups, no baseline; then the same with the plan reward.
    expect({ ...layoutGroups, experiment: rl.experiment, sft: rl.sft, compare: rl.compare, horizon: { ...layoutGroups.horizon, groupBy: 'layout-horizon' } }).toEqual(rl);
    expect(layoutGroups.horizon!.groupBy).toBe('layout');
    expect({ ...planReward, experiment: layoutGroups.experiment, horizon: { ...planReward.horizon, usePlanReward: false } }).toEqual(layoutGroups);
  });

  it("keeps the timelines from-run configs to the main job's RL, differing only in timeline.merge", () => {
    const load = (f: string) => loadRunConfig(path.resolve(__dirname, '../../configs', f));
    const main = load('default.yaml');
    const merged = load('timelines-merged-from-run.yaml');
    const perCall = load('timelines-per-call-from-run.yaml');
    // The timelines arms were measured at the main job's earlier RL rate (3e-4, before validation chose one).
    for (const key of ['model', 'rollout', 'timeline'] as const) expect(merged[key]).toEqual(main[key]);
    expect(merged.rl).toEqual({ ...main.rl, learningRate: 3e-4 });
    expect(merged.task.difficulty).toEqual(main.task.difficulty);
    expect(merged.task.rl).toEqual(main.task.rl);
    expect(merged.init).toMatchObject({ step: main.sft.steps });
    expect(merged.timeline.merge).toBe(true);
    expect({ ...perCall, experiment: merged.experiment, timeline: { ...perCall.timeline, merge: true } }).toEqual(merged);
    // RL (and RFT) at the rate validation chose: the merged arm's RL otherwise, with RFT.
    const tuned = load('rl-tuned-from-run.yaml');
    expect(tuned.rl.learningRate).toBe(1e-4);
    expect(tuned.compare.rft).toBe(true);
    expect({ ...tuned, experiment: merged.experiment, rl: { ...tuned.rl, learningRate: merged.rl.learningRate }, compare: merged.compare }).toEqual(merged);
    // RFT at its own validation choice beside RL at the main job's rate: otherwise the tuned config.
    const ownRate = load('rft-own-rate-from-run.yaml');
    expect(ownRate.rl.learningRate).toBe(main.rl.learningRate);
    expect(ownRate.compare.rftLearningRate).toBe(1e-4);
    expect({ ...ownRate, experiment: tuned.experiment, rl: { ...ownRate.rl, learningRate: tuned.rl.learningRate }, compare: { ...ownRate.compare, rftLearningRate: undefined } }).toEqual(tuned);
    // Filtered SFT's arm on the same checkpoint: the main job's SFT settings and budget (its chosen rate).
    const filtered = load('filtered-sft-from-run.yaml');
    expect(filtered.sft).toEqual(main.sft);
    expect(filtered.compare).toEqual({ ...main.compare, moreSft: false, rft: false });
    expect({ ...filtered.task, trainProblems: main.task.trainProblems, evalProblems: main.task.evalProblems }).toEqual(main.task);
    expect(filtered.init).toEqual(tuned.init);
  });

  it("keeps the tuned agent config to the agent's from-run config but for the main job's chosen RL rate and the baselines it leaves to filtered-sft-from-run", () => {
    const load = (f: string) => loadRunConfig(path.resolve(__dirname, '../../configs', f));
    const agent = load('agent-from-run.yaml');
    const tuned = load('agent-tuned-from-run.yaml');
    const main = load('default.yaml');
    expect(tuned.rl.learningRate).toBe(main.rl.learningRate);
    expect(tuned.compare).toEqual({ ...agent.compare, moreSft: false, filteredSft: false });
    expect({ ...tuned, experiment: agent.experiment, rl: { ...tuned.rl, learningRate: agent.rl.learningRate }, compare: agent.compare }).toEqual(agent);
    // Its filtered-SFT arm: the same checkpoint step, task and SFT settings (sft.steps there is the
    // checkpoint's schedule, which filtered SFT continues; here SFT does not run).
    const filtered = load('filtered-sft-from-run.yaml');
    expect(filtered.init.step).toBe(tuned.init.step);
    expect({ ...filtered.sft, steps: tuned.sft.steps }).toEqual(tuned.sft);
    expect({ ...filtered.task, trainProblems: tuned.task.trainProblems, evalProblems: tuned.task.evalProblems }).toEqual(tuned.task);
  });
});

describe('issue 24 keys refuse what they cannot do, naming the field', () => {
  const refused = (raw: Record<string, unknown>, field: string) => {
    try {
      parseRunConfig(raw);
    } catch (err) {
      expect((err as ConfigError).problems.map((p) => p.path)).toContain(field);
      return;
    }
    throw new Error(`expected ${field} to be refused`);
  };
  it('rl.advantageNorm role only in shared Plan/Act, rollout.plannerCredit only in Plan/Act', () => {
    refused({ rl: { advantageNorm: 'role' }, rollout: { kind: 'standard' } }, 'rl.advantageNorm');
    refused({ rl: { advantageNorm: 'role' }, rollout: { mode: 'dual' } }, 'rl.advantageNorm');
    refused({ rollout: { kind: 'tree', plannerCredit: 'correct-results' }, rl: { groupSize: 4 } }, 'rollout.plannerCredit');
    expect(parseRunConfig({ rl: { advantageNorm: 'role' }, rollout: { plannerCredit: 'correct-results' } }).rl.advantageNorm).toBe('role');
  });
  it('rollout.batchRequests false only where calls are activities (not an outside agent\'s)', () => {
    refused({ rollout: { kind: 'agent', batchRequests: false } }, 'rollout.batchRequests');
    expect(parseRunConfig({ rollout: { kind: 'standard', batchRequests: false } }).rollout.batchRequests).toBe(false);
  });
  it('rollout.episodesPerWorkflow only in Plan/Act rollouts (the others play their episodes in one workflow)', () => {
    refused({ rollout: { kind: 'standard', episodesPerWorkflow: 64 } }, 'rollout.episodesPerWorkflow');
    refused({ rollout: { episodesPerWorkflow: 0 } }, 'rollout.episodesPerWorkflow');
    expect(parseRunConfig({ rollout: { episodesPerWorkflow: 256, batchRequests: 'local' } }).rollout.episodesPerWorkflow).toBe(256);
    expect(parseRunConfig({}).rollout.episodesPerWorkflow).toBeUndefined();
  });
  it('a test split needs the sub-problem split', () => {
    refused({ task: { split: 'expression' } }, 'task.rl.testProblems');
    expect(parseRunConfig({ task: { split: 'expression', rl: { testProblems: 0 } } }).task.split).toBe('expression');
  });
});
