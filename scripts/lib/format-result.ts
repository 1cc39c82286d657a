import type { ComparedResult, TrainingRunResult } from '../../src/contracts/training-run';
import { comparedResults, pairedOnProblems } from '../../src/report/comparison';

/** The run's result as a person reads it at the end of the main job. */
export function formatResult(r: TrainingRunResult): string {
  const pct = (x: number | undefined) => (x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);
  const lines = [
    '',
    `experiment ${r.experiment} — backend ${r.backend}, ${r.sftSteps} SFT steps, final loss ${r.finalLoss?.toFixed(4) ?? '-'}`,
    '',
    '| step | weights | planner acc | actor acc | episode acc |',
    '|---:|---:|---:|---:|---:|',
    ...r.evals.map((e) => `| ${e.step} | v${e.weightVersion} | ${pct(e.plannerAccuracy)} | ${pct(e.actorAccuracy)} | ${pct(e.episodeAccuracy)} |`),
  ];
  if (r.rl.length > 0) {
    lines.push('', `RL (GRPO): ${r.rlSteps} steps (every step's numbers: ${r.metricsFile ?? 'the metrics file'})`, '', '| rl step | weights | mean reward | accuracy | loss | rows |', '|---:|---:|---:|---:|---:|---:|');
    const shown = r.rl.length > 12 ? [...r.rl.slice(0, 3), ...r.rl.slice(-9)] : r.rl;
    for (const p of shown) lines.push(`| ${p.step} | v${p.weightVersion} | ${p.meanReward.toFixed(3)} | ${pct(p.accuracy ?? 0)} | ${p.loss.toFixed(4)} | ${p.rows} |`);
  }
  if (r.comparison) {
    const c = r.comparison;
    const acc = (a?: { accuracy: number; stderr: number }) => (a ? `${pct(a.accuracy)} ± ${pct(a.stderr)}` : '-');
    const k = c.rl.passAtK?.length;
    const spent = (key: string, x: ComparedResult) =>
      x.steps === undefined ? '-' : `${x.steps} ${key === 'rl' ? 'RL' : key === 'rft' ? 'RFT' : 'SFT'} steps, ${x.seconds} s${x.trainedTokens !== undefined ? `, ${x.trainedTokens} tokens` : ''}`;
    const horizons = c.rl.byHorizon?.map((h) => h.horizon);
    if (horizons) {
      // The grid world: episodes are held-out layouts played once per plan horizon; success per H.
      const atH = (x: ComparedResult, h: number) => pct(x.byHorizon?.find((b) => b.horizon === h)?.rate);
      lines.push(
        '',
        `success on ${c.problems} ${c.split === 'test' ? 'test' : 'validation'} episodes (held-out layouts × plan horizons; ± one standard error):`,
        '',
        `| policy | greedy | sampled | ${horizons.map((h) => `H=${h}`).join(' | ')} | training |`,
        `|---|---:|---:|${horizons.map(() => '---:|').join('')}---|`,
        ...comparedResults(c).map(({ key, label, result: x }) => `| ${label} | ${acc(x.greedy)} | ${acc(x.sampled)} | ${horizons.map((h) => atH(x, h)).join(' | ')} | ${spent(key, x)} |`),
      );
    } else {
      lines.push(
        '',
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
  }
  if (r.curvesPng) lines.push('', `curves: ${r.curvesPng}`);
  if (r.final) {
    lines.push('', `held-out episode accuracy: ${pct(r.final.episodeAccuracy)} on ${r.final.problems} problems (chance ≈ 0%)`);
    if (r.final.examples.length > 0) lines.push('', 'example episode:', r.final.examples[0]!);
  }
  return lines.join('\n');
}
