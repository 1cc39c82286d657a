/** pass@k's unbiased estimator and the clustered standard error of n samples per problem. */
import { clusteredAccuracy, passAtK } from '../../src/eval/accuracy';

/** pass@k by enumerating every k-subset of the n samples. */
function bruteForce(correct: number, n: number, k: number): number {
  const samples = Array.from({ length: n }, (_, i) => i < correct);
  let hit = 0;
  let all = 0;
  const choose = (start: number, left: number, any: boolean): void => {
    if (left === 0) {
      all++;
      if (any) hit++;
      return;
    }
    for (let i = start; i <= n - left; i++) choose(i + 1, left - 1, any || samples[i]!);
  };
  choose(0, k, false);
  return hit / all;
}

test('pass@k equals the share of k-subsets with a correct sample, averaged over problems', () => {
  const correct = [0, 1, 3, 8, 5];
  const got = passAtK(correct, 8);
  expect(got).toHaveLength(8);
  for (let k = 1; k <= 8; k++) {
    const want = correct.reduce((a, c) => a + bruteForce(c, 8, k), 0) / correct.length;
    expect(got[k - 1]).toBeCloseTo(want, 12);
  }
  // pass@1 is the mean success rate; pass@n is the share of problems solved at least once.
  expect(got[0]).toBeCloseTo((0 + 1 + 3 + 8 + 5) / 40, 12);
  expect(got[7]).toBeCloseTo(4 / 5, 12);
});

test('clustered accuracy: mean of the problems\' rates, standard error from their spread over problems', () => {
  const a = clusteredAccuracy([8, 0, 8, 0], 8);
  expect(a.accuracy).toBe(0.5);
  // Rates 1, 0, 1, 0: sample sd 0.577, over sqrt(4) problems.
  expect(a.stderr).toBeCloseTo(Math.sqrt(1 / 3) / 2, 12);
  expect(a.total).toBe(32);
  // Every problem at 50%: no spread between problems.
  expect(clusteredAccuracy([4, 4, 4], 8).stderr).toBe(0);
});
