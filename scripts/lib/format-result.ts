import type { TrainingRunResult } from '../../src/contracts/training-run';
import { comparisonTable, pct } from '../../src/report/comparison-table';

/** The run's result as a person reads it at the end of the main job. */
export function formatResult(r: TrainingRunResult): string {
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
  if (r.comparison) lines.push('', ...comparisonTable(r.comparison));
  if (r.curvesPng) lines.push('', `curves: ${r.curvesPng}`);
  if (r.final) {
    lines.push('', `held-out episode accuracy: ${pct(r.final.episodeAccuracy)} on ${r.final.problems} problems (chance ≈ 0%)`);
    if (r.final.examples.length > 0) lines.push('', 'example episode:', r.final.examples[0]!);
  }
  return lines.join('\n');
}
