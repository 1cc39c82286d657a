import type { Sample } from '../../src/domain/types';
import { buildPgBatch, groupAdvantages } from '../../src/rl/grpo';

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

const GRPO = { normAdvByStd: true, epsilon: 1e-6 };
const DR_GRPO = { normAdvByStd: false, epsilon: 1e-6 };

describe('groupAdvantages', () => {
  it('normalises each episode reward by its group mean and sample std', () => {
    const stats = groupAdvantages([sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g1', 0), sample('d', 'g1', 0)], GRPO);
    // mean 0.25, sample std sqrt(0.75 / 3) = 0.5 (was the population std sqrt(0.1875) before)
    expect(stats.advantages.get('a')).toBeCloseTo(0.75 / (0.5 + 1e-6), 10);
    expect(stats.advantages.get('b')).toBeCloseTo(-0.25 / (0.5 + 1e-6), 10);
    expect(stats.meanReward).toBeCloseTo(0.25);
    expect(stats.groups).toBe(1);
  });

  it('counts an episode once however many samples it has', () => {
    // Episode a has three samples; counted thrice, the mean would be 0.75, not 0.5.
    // Scores 1 0: mean 0.5, sample std √0.5: A = ±0.5 / (√0.5 + 1e-6) = ±0.70710578 (population std gave ±1).
    const stats = groupAdvantages([sample('a', 'g', 1), sample('a', 'g', 1), sample('a', 'g', 1), sample('b', 'g', 0)], GRPO);
    expect(stats.meanReward).toBeCloseTo(0.5);
    expect(stats.advantages.get('a')).toBeCloseTo(0.707105781188, 10);
    expect(stats.advantages.get('b')).toBeCloseTo(-0.707105781188, 10);
  });

  it('keeps flat groups (advantage 0) and ungrouped episodes (a group of one: advantage = reward)', () => {
    const stats = groupAdvantages([sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g2', 1), sample('d', 'g2', 1), sample('e', undefined, 1)], GRPO);
    expect([...stats.advantages.keys()].sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(stats.advantages.get('c')).toBe(0);
    expect(stats.advantages.get('d')).toBe(0);
    expect(stats.advantages.get('e')).toBeCloseTo(1 / (1 + 1e-6), 12);
    expect(stats.groups).toBe(3);
    expect(stats.flatGroups).toBe(1);
    expect(stats.singletonGroups).toBe(1);
  });

  describe('KL penalty in the reward (useKlInReward)', () => {
    // Behaviour logprobs -0.1 -0.2 -0.3, mask 1 0 1.
    // a's two samples: ref -0.3 -5 -0.2 → k1 per trained token: -0.1 + 0.3 = 0.2 and -0.3 + 0.2 = -0.1
    //   (the masked token, 4.8 apart, does not count): 0.1 per sample, 0.2 for the episode.
    // b: ref equal to the behaviour logprobs: 0.
    const samples = [sample('a', 'g', 1), sample('a', 'g', 1), sample('b', 'g', 0)];
    const refA = [-0.3, -5, -0.2];
    const refB = [-0.1, -0.2, -0.3];
    const refLogprobs = [refA, refA, refB];

    it('subtracts β Σ_t kl_t over the episode from its score before normalising (k1)', () => {
      const stats = groupAdvantages(samples, { ...DR_GRPO, klInReward: { coef: 0.5, kind: 'kl', refLogprobs } });
      // Scores: a 1 - 0.5·0.2 = 0.9, b 0. Dr.GRPO: mean 0.45 → a +0.45, b -0.45 (without KL: ±0.5).
      expect(stats.advantages.get('a')).toBeCloseTo(0.45, 12);
      expect(stats.advantages.get('b')).toBeCloseTo(-0.45, 12);
      // The reported reward is the task's, before the penalty.
      expect(stats.meanReward).toBeCloseTo(0.5, 12);
      // Per-sample mean KL: 0.1/2, 0.1/2, 0 → mean over 3 samples 0.1/3.
      expect(stats.rewardKlPenalty).toBeCloseTo(0.1 / 3, 12);
    });

    it('uses the configured estimator (k2)', () => {
      // k2 per trained token of a: ½·0.2² + ½·0.1² = 0.025 per sample, 0.05 for the episode.
      // Scores a 1 - 0.5·0.05 = 0.975, b 0: mean 0.4875 → a +0.4875.
      const stats = groupAdvantages(samples, { ...DR_GRPO, klInReward: { coef: 0.5, kind: 'k2', refLogprobs } });
      expect(stats.advantages.get('a')).toBeCloseTo(0.4875, 12);
    });

    it('normalises penalised scores by the group std (three episodes, k1)', () => {
      // c scores 0.5 with no penalty. Scores 0.9 0 0.5: mean 1.4/3, deviations 0.9-1.4/3, -1.4/3, 0.5-1.4/3;
      // sample variance = (0.18778 + 0.21778 + 0.00111) / 2 = 0.20333, std 0.450925.
      const withC = [...samples, sample('c', 'g', 0.5)];
      const stats = groupAdvantages(withC, { ...GRPO, klInReward: { coef: 0.5, kind: 'kl', refLogprobs: [...refLogprobs, refB] } });
      const mean = 1.4 / 3;
      const std = Math.sqrt(((0.9 - mean) ** 2 + mean ** 2 + (0.5 - mean) ** 2) / 2);
      expect(std).toBeCloseTo(0.450925, 6);
      expect(stats.advantages.get('a')).toBeCloseTo((0.9 - mean) / (std + 1e-6), 10);
      expect(stats.advantages.get('c')).toBeCloseTo((0.5 - mean) / (std + 1e-6), 10);
    });

    it('a sample without reference logprobs (too long to score) adds no penalty', () => {
      const stats = groupAdvantages(samples, { ...DR_GRPO, klInReward: { coef: 0.5, kind: 'kl', refLogprobs: [refA, undefined, refB] } });
      // a: 1 - 0.5·0.1 = 0.95; mean 0.475.
      expect(stats.advantages.get('a')).toBeCloseTo(0.475, 12);
    });
  });
});

describe('buildPgBatch', () => {
  it('aligns loss mask and old logprobs with prompt ++ response and keeps flat groups', () => {
    const samples = [sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g2', 0), sample('d', 'g2', 0)];
    const { batch, skipped, tooLong, rowGroups, responseLengths } = buildPgBatch(samples, { maxSeq: 64, ...GRPO });
    expect(skipped).toBe(0);
    expect(tooLong).toBe(0);
    expect(batch.tokens).toHaveLength(4);
    expect(batch.tokens[0]).toEqual([5, 6, 7, 8, 9]);
    expect(batch.lossMask[0]).toEqual([0, 0, 1, 0, 1]);
    expect(batch.oldLogprobs![0]).toEqual([0, 0, -0.1, -0.2, -0.30000000000000004]);
    expect(batch.advantages![0]).toBeCloseTo(0.707105781188, 10);
    expect(batch.advantages![1]).toBeCloseTo(-0.707105781188, 10);
    expect(batch.advantages!.slice(2)).toEqual([0, 0]);
    expect(batch.refLogprobs).toBeUndefined();
    expect(rowGroups).toEqual(['group:g1', 'group:g1', 'group:g2', 'group:g2']);
    expect(responseLengths).toEqual([3, 3, 3, 3]);
    for (let r = 0; r < batch.tokens.length; r++) {
      expect(batch.lossMask[r]).toHaveLength(batch.tokens[r]!.length);
      expect(batch.oldLogprobs![r]).toHaveLength(batch.tokens[r]!.length);
    }
  });

  it('leaves out rows without a trained token, whose episodes still count in their group', () => {
    const silent = { ...sample('c', 'g', 0), lossMask: [0, 0, 0] };
    const { batch, skipped } = buildPgBatch([sample('a', 'g', 1), sample('b', 'g', 0), silent], { maxSeq: 64, ...DR_GRPO });
    expect(skipped).toBe(1);
    // Scores 1 0 0: mean 1/3.
    expect(batch.advantages).toEqual([1 - 1 / 3, -1 / 3]);
  });

  it('drops rows longer than maxSeq and counts them', () => {
    const samples = [sample('a', 'g', 1, [1, 2, 3], [4, 5, 6]), sample('b', 'g', 0, [1], [2])];
    const { batch, tooLong } = buildPgBatch(samples, { maxSeq: 5, ...GRPO });
    expect(tooLong).toBe(1);
    expect(batch.tokens).toEqual([[1, 2]]);
  });

  it('copies reference logprobs for the KL loss, prompt part zeros', () => {
    const { batch } = buildPgBatch([sample('a', 'g', 1), sample('b', 'g', 0)], { maxSeq: 64, ...GRPO, refLogprobs: [[-1, -2, -3], [-4, -5, -6]] });
    expect(batch.refLogprobs).toEqual([
      [0, 0, -1, -2, -3],
      [0, 0, -4, -5, -6],
    ]);
  });
});

describe('buildPgBatch objective rft (compare.rft)', () => {
  it('keeps only the samples of rewarded episodes, each with advantage 1, and counts the others as rejected', () => {
    // A flat group of correct episodes still trains under RFT (GRPO would give it advantage 0).
    const samples = [sample('a', 'g1', 1), sample('a', 'g1', 1), sample('b', 'g1', 0), sample('c', 'g2', 1), sample('d', 'g2', 1), sample('e', 'g3', 0)];
    const { batch, rejected, rowGroups } = buildPgBatch(samples, { ...GRPO, maxSeq: 64, objective: 'rft' });
    expect(batch.advantages).toEqual([1, 1, 1, 1]);
    expect(rejected).toBe(2);
    expect(rowGroups).toEqual(['group:g1', 'group:g1', 'group:g2', 'group:g2']);
    // Behaviour logprobs stay the ratio's denominator (RAFT++: importance ratio and clip).
    expect(batch.oldLogprobs![0]!.slice(2)).toEqual(samples[0]!.logprobs);
    const grpo = buildPgBatch(samples, { ...GRPO, maxSeq: 64 });
    expect(grpo.rejected).toBeUndefined();
    expect(grpo.batch.tokens).toHaveLength(6);
  });

  it('ignores per-token tree credit: every kept token gets advantage 1', () => {
    const s = { ...sample('a', 'g', 1), tokenAdvantages: [0.5, -0.5, 0.25] };
    const { batch } = buildPgBatch([s, sample('b', 'g', 0)], { ...GRPO, maxSeq: 64, objective: 'rft' });
    expect(batch.tokenAdvantages).toBeUndefined();
    expect(batch.advantages).toEqual([1]);
  });
});

describe('rl.advantageNorm role', () => {
  const role = (s: Sample, r: 'planner' | 'actor'): Sample => ({ ...s, metadata: { ...s.metadata, role: r } });
  it('normalises each role over the episodes that have its samples', () => {
    // Episode c's plan failed before any act: it has a planner sample and no actor sample.
    const samples = [role(sample('a', 'g', 1), 'planner'), role(sample('a', 'g', 1), 'actor'), role(sample('b', 'g', 0), 'planner'), role(sample('b', 'g', 0), 'actor'), role(sample('c', 'g', 0), 'planner')];
    const perEpisode = buildPgBatch(samples, { ...GRPO, maxSeq: 64 }).batch.advantages!;
    const perRole = buildPgBatch(samples, { ...GRPO, maxSeq: 64, advantageNorm: 'role' }).batch.advantages!;
    // Planner: the same three episodes either way.
    expect([perRole[0], perRole[2], perRole[4]]).toEqual([perEpisode[0], perEpisode[2], perEpisode[4]]);
    // Actor: among a and b only (scores 1, 0: ±0.5 / (sd √0.5 + ε)), not among a, b, c.
    expect(perRole[1]).toBeCloseTo(0.707105781188, 9);
    expect(perRole[3]).toBeCloseTo(-0.707105781188, 9);
    expect(perEpisode[1]).not.toBeCloseTo(perRole[1]!, 3);
  });
});

describe("buildPgBatch's per-sample credit (the rollout record)", () => {
  it('gives every input sample, in order, its advantage and what became of it', () => {
    const silent = { ...sample('c', 'g', 0), lossMask: [0, 0, 0] };
    const long = sample('d', 'g', 0, [1, 2, 3], [4, 5, 6]);
    const { perSample, batch } = buildPgBatch([sample('a', 'g', 1), sample('b', 'g', 0), silent, long], { maxSeq: 5, ...DR_GRPO });
    // Scores 1 0 0 0: mean 1/4.
    expect(perSample).toEqual([
      { advantage: 0.75, status: 'trained' },
      { advantage: -0.25, status: 'trained' },
      { advantage: -0.25, status: 'no-trained-token' },
      { advantage: -0.25, status: 'too-long' },
    ]);
    expect(batch.advantages).toEqual([0.75, -0.25]);
  });

  it('marks RFT-rejected samples, and gives the kept ones advantage 1', () => {
    const { perSample } = buildPgBatch([sample('a', 'g', 1), sample('b', 'g', 0)], { maxSeq: 64, ...GRPO, objective: 'rft' });
    expect(perSample).toEqual([
      { advantage: 1, status: 'trained' },
      { advantage: 0, status: 'rejected' },
    ]);
  });
});
