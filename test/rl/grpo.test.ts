import type { Sample } from '../../src/domain/types';
import { initTfBackend } from '../../src/model/backend';
import { initWeights } from '../../src/model/init';
import { sequenceLogprobs } from '../../src/model/train';
import { Gpt } from '../../src/model/gpt';
import { buildPgBatch, groupAdvantages } from '../../src/rl/grpo';
import { runGrpoUpdate } from '../../src/rl/grpo-update';

function sample(episodeId: string, groupId: string | undefined, reward: number, prompt = [5, 6], response = [7, 8, 9]): Sample {
  return {
    promptTokens: prompt,
    responseTokens: response,
    logprobs: response.map((_, i) => -0.1 * (i + 1)),
    lossMask: response.map((_, i) => (i === 1 ? 0 : 1)),
    reward,
    metadata: { role: 'planner', episodeId, turn: 0, weightVersion: 1, ...(groupId !== undefined ? { groupId } : {}) },
  };
}

describe('groupAdvantages', () => {
  it('normalises each episode reward by its group mean and population std', () => {
    const stats = groupAdvantages([sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g1', 0), sample('d', 'g1', 0)]);
    // mean 0.25, std sqrt(0.1875)
    const std = Math.sqrt(0.1875);
    expect(stats.advantages.get('a')).toBeCloseTo(0.75 / (std + 1e-6), 6);
    expect(stats.advantages.get('b')).toBeCloseTo(-0.25 / (std + 1e-6), 6);
    expect(stats.meanReward).toBeCloseTo(0.25);
    expect(stats.groups).toBe(1);
  });

  it('counts an episode once however many samples it has', () => {
    // Episode a has three samples; were they counted thrice, the mean would be 0.75, not 0.5.
    const stats = groupAdvantages([sample('a', 'g', 1), sample('a', 'g', 1), sample('a', 'g', 1), sample('b', 'g', 0)]);
    expect(stats.meanReward).toBeCloseTo(0.5);
    expect(stats.advantages.get('a')).toBeCloseTo(1, 4);
    expect(stats.advantages.get('b')).toBeCloseTo(-1, 4);
  });

  it('keeps groups apart and leaves flat groups and ungrouped episodes without an advantage', () => {
    const stats = groupAdvantages([sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g2', 1), sample('d', 'g2', 1), sample('e', undefined, 1)]);
    expect([...stats.advantages.keys()].sort()).toEqual(['a', 'b']);
    expect(stats.groups).toBe(3);
    expect(stats.flatGroups).toBe(2);
  });
});

describe('buildPgBatch', () => {
  it('aligns loss mask and old logprobs with prompt ++ response and skips flat groups', () => {
    const samples = [sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g2', 0), sample('d', 'g2', 0)];
    const { batch, skipped, tooLong } = buildPgBatch(samples, { maxSeq: 64, clipEps: 0.3 });
    expect(skipped).toBe(2);
    expect(tooLong).toBe(0);
    expect(batch.tokens).toEqual([[5, 6, 7, 8, 9], [5, 6, 7, 8, 9]]);
    expect(batch.lossMask[0]).toEqual([0, 0, 1, 0, 1]);
    expect(batch.oldLogprobs![0]).toEqual([0, 0, -0.1, -0.2, -0.30000000000000004]);
    expect(batch.advantages![0]).toBeCloseTo(1, 4);
    expect(batch.advantages![1]).toBeCloseTo(-1, 4);
    expect(batch.clipEps).toBe(0.3);
    for (let r = 0; r < batch.tokens.length; r++) {
      expect(batch.lossMask[r]).toHaveLength(batch.tokens[r]!.length);
      expect(batch.oldLogprobs![r]).toHaveLength(batch.tokens[r]!.length);
    }
  });

  it('drops rows longer than maxSeq and counts them', () => {
    const samples = [sample('a', 'g', 1, [1, 2, 3], [4, 5, 6]), sample('b', 'g', 0, [1], [2])];
    const { batch, tooLong } = buildPgBatch(samples, { maxSeq: 5, clipEps: 0.2 });
    expect(tooLong).toBe(1);
    expect(batch.tokens).toEqual([[1, 2]]);
  });
});

describe('runGrpoUpdate', () => {
  beforeAll(async () => {
    await initTfBackend();
  });

  it('raises the logprob of the rewarded response and lowers the other', () => {
    const config = { vocabSize: 16, maxSeq: 16, dModel: 16, nLayers: 1, nHeads: 2, dFf: 32 };
    const ckpt = { config, weights: initWeights(config, 3), step: 10 };
    const good = [3, 4, 5];
    const bad = [6, 7, 8];
    const logp = (weights: typeof ckpt.weights, response: number[]): number[] => {
      const model = Gpt.fromWeights(config, weights);
      try {
        return sequenceLogprobs(model, [[1, 2, ...response]])[0]!.slice(2);
      } finally {
        model.dispose();
      }
    };
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    // Old logprobs from the current policy keep the ratio at 1, inside the clip range.
    const onPolicy = (response: number[], episodeId: string, reward: number): Sample => ({
      ...sample(episodeId, 'g', reward, [1, 2], response),
      logprobs: logp(ckpt.weights, response),
      lossMask: response.map(() => 1),
    });
    const samples = [onPolicy(good, 'a', 1), onPolicy(bad, 'b', 0)];
    const r = runGrpoUpdate(ckpt, samples, { learningRate: 1e-2, clipEps: 0.2, step: 11, resetOptimizer: true, microBatchRows: 1 });
    expect(r.rows).toBe(2);
    expect(r.checkpoint.step).toBe(11);
    expect(r.clipFraction).toBe(0);
    expect(sum(logp(r.checkpoint.weights, good))).toBeGreaterThan(sum(logp(ckpt.weights, good)));
    expect(sum(logp(r.checkpoint.weights, bad))).toBeLessThan(sum(logp(ckpt.weights, bad)));
  });
});
