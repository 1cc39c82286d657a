/** Accuracies with their standard errors, pass@k from n samples per problem, and tool use. */

/** An accuracy with its standard error (binomial, sqrt(p(1-p)/n)) so differences can be judged. */
export interface Accuracy {
  correct: number;
  total: number;
  accuracy: number;
  stderr: number;
}

export function accuracyOf(correct: number, total: number): Accuracy {
  const p = total === 0 ? 0 : correct / total;
  return { correct, total, accuracy: p, stderr: total === 0 ? 0 : Math.sqrt((p * (1 - p)) / total) };
}

/**
 * Accuracy over problems with n samples each: the mean of the problems' success rates, its standard
 * error from the spread of those rates over problems (samples of one problem are not independent).
 */
export function clusteredAccuracy(correctPerProblem: readonly number[], n: number): Accuracy {
  const rates = correctPerProblem.map((c) => c / n);
  const p = rates.length === 0 ? 0 : rates.reduce((a, b) => a + b, 0) / rates.length;
  const variance = rates.length < 2 ? 0 : rates.reduce((a, r) => a + (r - p) ** 2, 0) / (rates.length - 1);
  return { correct: correctPerProblem.reduce((a, b) => a + b, 0), total: rates.length * n, accuracy: p, stderr: Math.sqrt(variance / Math.max(1, rates.length)) };
}

/**
 * pass@k for k = 1...n: per problem 1 - C(n-c, k) / C(n, k) (the chance that k of its n samples,
 * drawn without replacement, hold a correct one; Chen et al. 2021), averaged over problems.
 */
export function passAtK(correctPerProblem: readonly number[], n: number): number[] {
  if (correctPerProblem.length === 0) return [];
  return Array.from({ length: n }, (_, i) => {
    const k = i + 1;
    const total = correctPerProblem.reduce((sum, c) => sum + (1 - missAll(n, c, k)), 0);
    return total / correctPerProblem.length;
  });
}

/** C(n - c, k) / C(n, k): all k draws miss the c correct samples; a product, so no large binomials. */
function missAll(n: number, c: number, k: number): number {
  if (n - c < k) return 0;
  let p = 1;
  for (let i = 0; i < k; i++) p *= (n - c - i) / (n - i);
  return p;
}

export interface ToolUse {
  /** Acts the planner issued in the greedy episodes. */
  acts: number;
  /** Share of them whose actor called the calculator. */
  actToolRate: number;
  /** Accuracy of the episodes in which every act called the calculator, and of those with an act that did not (episodes without acts: neither). */
  everyActUsedTool: Accuracy;
  someActWithoutTool: Accuracy;
}
