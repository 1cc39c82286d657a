/**
 * trainingRun's baselines (compare.*) and its test evaluation, on the real dev server with the real
 * activities: each baseline trains under its own key from the checkpoint RL started from, and every
 * compared policy is evaluated once on distinct test problems.
 */
import fs from 'node:fs';
import { names } from '../../src/store/run-names';
import { parseMetricsJsonl } from '../../src/report';
import { parseRunConfig } from '../../src/config/parse';
import type { RolloutSummary } from '../../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../../src/contracts/training-run';
import type { EvaluateEpisodesInput } from '../../activities/inference';
import { testEnv, tinyRlConfig, type TestEnv } from '../helpers/temporal';
import { scheduledInputs } from '../helpers/history';

let ctx: TestEnv;

beforeAll(async () => {
  ctx = await testEnv('baselines');
});

afterAll(async () => {
  await ctx?.stop();
});

describe('compare.* baselines and the test evaluation', () => {
  it('runs more SFT and filtered SFT for a fixed number of sequences, RFT on RL\'s prompts, and evaluates each policy once on the test problems', async () => {
    const base = tinyRlConfig({ steps: 2 });
    const { workflowId, handle } = await ctx.startTrainingRun('baselines', {
      ...base,
      task: { trainProblems: 40, evalProblems: 4, demoToolUseRate: 0.5, rl: { evalProblems: 4, testProblems: 5 } },
      eval: { everySteps: 0, rlEverySteps: 0, maxNewTokens: 8, passAtK: 3 },
      compare: { moreSft: true, filteredSft: true, rft: true, rftLearningRate: 0.0123, sftBudget: { sequences: 8 } },
    });
    const result = (await handle.result()) as TrainingRunResult;
    const c = result.comparison!;
    expect(c.split).toBe('test');
    expect(c.problems).toBe(5);
    for (const policy of [c.sftOnly, c.rl, c.moreSft!, c.filteredSft!, c.rft!]) {
      expect(policy.greedy.total).toBe(5);
      expect(policy.passAtK).toHaveLength(3);
      expect(policy.perProblem).toMatch(/^[01]{5}$/);
      expect(policy.tools).toBeDefined();
      // Three sampled episodes per problem: pass@1 is their mean success rate.
      expect(policy.sampled!.total).toBe(15);
      expect(policy.passAtK![0]).toBeCloseTo(policy.sampled!.accuracy, 10);
    }
    // 8 sequences of sft.batchSize 4: two SFT steps each, from the checkpoint RL started from (step 4).
    expect(c.moreSft!.steps).toBe(2);
    expect(c.filteredSft!.steps).toBe(2);
    for (const key of ['~more-sft', '~filtered-sft']) expect(await ctx.store.getName(names.checkpoint(`${workflowId}${key}`, 6))).toBeDefined();
    expect(c.rft!.steps).toBe(2);

    // RFT played RL's prompts at each step, with its own weights, and fitted only rewarded episodes.
    const metrics = parseMetricsJsonl(fs.readFileSync(result.metricsFile!, 'utf8'));
    for (const step of [1, 2]) {
      const rl = (await ctx.env.client.workflow.getHandle(`${workflowId}/rollout-${step}`).result()) as RolloutSummary;
      const rft = (await ctx.env.client.workflow.getHandle(`${workflowId}~rft/rollout-${step}`).result()) as RolloutSummary;
      expect(rft.rows.map((r) => r.expression)).toEqual(rl.rows.map((r) => r.expression));
      const line = metrics.rft.find((l) => l.step === step)!;
      expect(line.accuracy).toBeCloseTo(rft.rows.filter((r) => r.reward > 0).length / rft.rows.length, 10);
      if (rft.rows.every((r) => r.reward <= 0)) expect(line.trainedSamples).toBe(0);
      else expect(line.trainedSamples).toBeGreaterThan(0);
    }
    // Each compared policy once on the test part, and the metrics file has its line.
    const history = await handle.fetchHistory();
    const tests = scheduledInputs<EvaluateEpisodesInput>(history, 'evaluateEpisodes').filter((i) => i.part === 'test');
    expect(tests).toHaveLength(5);
    expect(tests.every((i) => i.problems === 5 && i.samplesPerProblem === 3 && i.scheme === 'subproblem')).toBe(true);
    expect(metrics.test.map((t) => t.policy).sort()).toEqual(['filteredSft', 'moreSft', 'rft', 'rl', 'sftOnly']);

    // compare.rftLearningRate reaches RFT's updates and only them.
    const updates = scheduledInputs<{ runId: string; rl: { learningRate: number } }>(history, 'trainGrpo');
    const rateOf = (branch: (runId: string) => boolean) => updates.filter((u) => branch(u.runId)).map((u) => u.rl.learningRate);
    expect(rateOf((id) => id.endsWith('~rft'))).toEqual([0.0123, 0.0123]);
    expect(rateOf((id) => id === workflowId)).toEqual([parseRunConfig(base).rl.learningRate, parseRunConfig(base).rl.learningRate]);
  });

  it('refuses a baseline the run cannot honour, naming the key', async () => {
    const noRl = await ctx.startTrainingRun('baselines-no-rl', { ...tinyRlConfig({ steps: 0 }), compare: { rft: true } });
    await expect(noRl.handle.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/compare\.rft/) } });
    const grid = await ctx.startTrainingRun('baselines-grid', {
      ...tinyRlConfig(),
      eval: { everySteps: 0, rlEverySteps: 0 },
      rl: { steps: 1, promptsPerStep: 2, groupSize: 3 },
      task: { kind: 'grid', grid: { rows: 4, cols: 4, walls: 2, maxSteps: 8 }, trainProblems: 20, evalProblems: 3 },
      rollout: { kind: 'horizon' },
      compare: { filteredSft: true },
    });
    await expect(grid.handle.result()).rejects.toMatchObject({ cause: { type: 'ConfigError', message: expect.stringMatching(/compare\.filteredSft/) } });
  });
});
