/**
 * A run's comparison as a person reads it: a Markdown table of every compared policy (greedy,
 * sampled, pass@k, tool use or success per plan horizon, what its training spent) and RL minus each
 * on the same test problems. The main job prints it; tracked runs upload it to MLflow as comparison.md.
 */
import type { ComparedResult, Comparison } from '../contracts/training-run';
import { comparedResults, pairedOnProblems } from './comparison';

/** A fraction as a percentage with one decimal; "–" for none. */
export const pct = (x: number | undefined): string => (x === undefined ? '–' : `${(100 * x).toFixed(1)}%`);

/** The comparison's lines: a title, the table, and (test runs with per-problem results) the paired differences. */
export function comparisonTable(c: Comparison): string[] {
  const lines: string[] = [];
  const acc = (a?: { accuracy: number; stderr: number }) => (a ? `${pct(a.accuracy)} ± ${pct(a.stderr)}` : '-');
  const k = c.rl.passAtK?.length;
  const spent = (key: string, x: ComparedResult) =>
    x.steps === undefined ? '-' : `${x.steps} ${key === 'rl' ? 'RL' : key === 'rft' ? 'RFT' : 'SFT'} steps, ${x.seconds} s${x.trainedTokens !== undefined ? `, ${x.trainedTokens} tokens` : ''}`;
  const horizons = c.rl.byHorizon?.map((h) => h.horizon);
  if (horizons) {
    // The grid world: episodes are held-out layouts played once per plan horizon; success per H.
    const atH = (x: ComparedResult, h: number) => pct(x.byHorizon?.find((b) => b.horizon === h)?.rate);
    lines.push(
      `success on ${c.problems} ${c.split === 'test' ? 'test' : 'validation'} episodes (held-out layouts × plan horizons; ± one standard error):`,
      '',
      `| policy | greedy | sampled | ${horizons.map((h) => `H=${h}`).join(' | ')} | training |`,
      `|---|---:|---:|${horizons.map(() => '---:|').join('')}---|`,
      ...comparedResults(c).map(({ key, label, result: x }) => `| ${label} | ${acc(x.greedy)} | ${acc(x.sampled)} | ${horizons.map((h) => atH(x, h)).join(' | ')} | ${spent(key, x)} |`),
    );
  } else {
    lines.push(
      `accuracy on ${c.problems} ${c.split === 'test' ? 'test' : 'validation'} problems of the RL distribution (± one standard error):`,
      '',
      `| policy | greedy | sampled | ${k ? `pass@${k} | ` : ''}acts with the calculator | training |`,
      `|---|---:|---:|${k ? '---:|' : ''}---:|---|`,
      ...comparedResults(c).map(({ key, label, result: x }) => `| ${label} | ${acc(x.greedy)} | ${acc(x.sampled)} | ${k ? `${pct(x.passAtK?.at(-1))} | ` : ''}${pct(x.tools?.actToolRate)} | ${spent(key, x)} |`),
    );
  }
  const rl = c.rl.perProblem;
  const paired = comparedResults(c).filter((p) => p.key !== 'rl' && p.result.perProblem && rl);
  if (paired.length > 0) {
    lines.push('', 'RL minus each policy on the same test problems (greedy, paired standard error):');
    for (const p of paired) {
      const d = pairedOnProblems(rl!, p.result.perProblem!);
      lines.push(`  RL − ${p.label.replace(/^SFT \+ /, '')}: ${d.diff >= 0 ? '+' : ''}${(100 * d.diff).toFixed(1)} ± ${(100 * d.stderr).toFixed(1)} points`);
    }
  }
  return lines;
}
