import type { TrainingRunResult } from '../../workflows/training-run-types';

/** The run's result as a person reads it at the end of the main job. */
export function formatResult(r: TrainingRunResult): string {
  const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
  const lines = [
    '',
    `experiment ${r.experiment} — backend ${r.backend}, ${r.sftSteps} SFT steps, final loss ${r.finalLoss?.toFixed(4) ?? '-'}`,
    '',
    '| step | weights | planner acc | actor acc | episode acc |',
    '|---:|---:|---:|---:|---:|',
    ...r.evals.map((e) => `| ${e.step} | v${e.weightVersion} | ${pct(e.plannerAccuracy)} | ${pct(e.actorAccuracy)} | ${pct(e.episodeAccuracy)} |`),
  ];
  if (r.rl.length > 0) {
    lines.push('', `RL (GRPO): ${r.rlSteps} steps`, '', '| rl step | weights | mean reward | loss | rows | skipped |', '|---:|---:|---:|---:|---:|---:|');
    for (const p of r.rl) lines.push(`| ${p.step} | v${p.weightVersion} | ${p.meanReward.toFixed(3)} | ${p.loss.toFixed(4)} | ${p.rows} | ${p.skipped} |`);
  }
  if (r.final) {
    lines.push('', `held-out episode accuracy: ${pct(r.final.episodeAccuracy)} on ${r.final.problems} problems (chance ≈ 0%)`);
    if (r.final.examples.length > 0) lines.push('', 'example episode:', r.final.examples[0]!);
  }
  return lines.join('\n');
}
