/**
 * GRPO advantages against numbers worked out by hand from verl's compute_grpo_outcome_advantage:
 * A = (s - mean) / (std + ε) with torch.std (sample, n - 1), a group of one has mean 0 and std 1,
 * and A = s - mean without std normalisation (Dr.GRPO).
 */
import { episodeAdvantages, groupAdvantage } from '../../src/rl/advantages';

const GRPO = { normAdvByStd: true, epsilon: 1e-6 };
const DR_GRPO = { normAdvByStd: false, epsilon: 1e-6 };

describe('groupAdvantage', () => {
  it('divides by the sample (n - 1) std, not the population std', () => {
    // scores 1 0 0 0: mean 0.25; squared deviations 0.5625 + 3·0.0625 = 0.75;
    // sample variance 0.75 / 3 = 0.25, std 0.5 (the population std would be sqrt(0.1875) = 0.433).
    // A = 0.75 / 0.500001 = 1.499997000006, -0.25 / 0.500001 = -0.499999000002
    const a = groupAdvantage([1, 0, 0, 0], GRPO);
    expect(a[0]).toBeCloseTo(1.499997000006, 10);
    for (const x of a.slice(1)) expect(x).toBeCloseTo(-0.499999000002, 10);
  });

  it('two members: ±1/√2 with the sample std (population std would give ±1)', () => {
    // scores 2 4: mean 3, sample variance (1 + 1) / 1 = 2, std √2; A = ±1 / (√2 + 1e-6) = ±0.7071062811869
    const a = groupAdvantage([2, 4], GRPO);
    expect(a[0]).toBeCloseTo(-0.7071062811869, 10);
    expect(a[1]).toBeCloseTo(0.7071062811869, 10);
  });

  it('a flat group gives every member advantage 0', () => {
    // mean 1, std 0: (1 - 1) / (0 + 1e-6) = 0
    expect(groupAdvantage([1, 1, 1], GRPO)).toEqual([0, 0, 0]);
    expect(groupAdvantage([1, 1, 1], DR_GRPO)).toEqual([0, 0, 0]);
  });

  it('a group of one has mean 0 and std 1 (verl), so its advantage is its score', () => {
    // (0.7 - 0) / (1 + 1e-6) = 0.6999993000007
    expect(groupAdvantage([0.7], GRPO)[0]).toBeCloseTo(0.6999993000007, 12);
    // Dr.GRPO: 0.7 - 0
    expect(groupAdvantage([0.7], DR_GRPO)[0]).toBe(0.7);
  });

  it('normAdvByStd false (Dr.GRPO) only subtracts the group mean', () => {
    // mean 0.25: 0.75, -0.25, -0.25, -0.25
    expect(groupAdvantage([1, 0, 0, 0], DR_GRPO)).toEqual([0.75, -0.25, -0.25, -0.25]);
    // mean 3: -1, 1 (not ±1/√2)
    expect(groupAdvantage([2, 4], DR_GRPO)).toEqual([-1, 1]);
  });

  it('uses the epsilon it is given', () => {
    // scores 0 1: mean 0.5, std √0.5 = 0.70710678; A = 0.5 / (0.70710678 + 0.1) = 0.61812613
    expect(groupAdvantage([0, 1], { normAdvByStd: true, epsilon: 0.1 })[1]).toBeCloseTo(0.5 / (Math.SQRT1_2 + 0.1), 12);
  });
});

describe('episodeAdvantages', () => {
  it('normalises within each group and keeps flat and one-member groups', () => {
    const r = episodeAdvantages(
      [
        { episodeId: 'a', groupId: 'g1', score: 1 },
        { episodeId: 'b', groupId: 'g1', score: 0 },
        { episodeId: 'c', groupId: 'g2', score: 1 },
        { episodeId: 'd', groupId: 'g2', score: 1 },
        { episodeId: 'e', groupId: undefined, score: 1 },
        { episodeId: 'f', groupId: undefined, score: 0 },
      ],
      GRPO,
    );
    // g1: 1 0 → ±0.5 / (√0.5 + 1e-6) = ±0.7071057811880
    expect(r.advantages.get('a')).toBeCloseTo(0.707105781188, 10);
    expect(r.advantages.get('b')).toBeCloseTo(-0.707105781188, 10);
    // g2 is flat: 0 each; e and f are groups of one each: score / (1 + 1e-6)
    expect(r.advantages.get('c')).toBe(0);
    expect(r.advantages.get('d')).toBe(0);
    expect(r.advantages.get('e')).toBeCloseTo(1 / (1 + 1e-6), 12);
    expect(r.advantages.get('f')).toBe(0);
    expect(r.groups).toBe(4);
    expect(r.flatGroups).toBe(1);
    expect(r.singletonGroups).toBe(2);
  });
});
