/**
 * One x axis for a run that does SFT and then RL. Both phases count steps from their own start,
 * so RL step k is placed at (last SFT step + k): RL step 0 is the SFT result itself, and held-out
 * accuracy and loss read left to right as one run. Panels about RL alone keep plain RL steps.
 */
import type { RunMetrics, TrainingPhase } from './run-metrics';

export interface Timeline {
  /** Where a step of a phase goes on the shared x axis. */
  x(phase: TrainingPhase, step: number): number;
  /** Axis title that says how to read the axis. */
  title: string;
  /** x of the SFT -> RL switch when the run has both phases. */
  rlStart?: number;
}

export function runTimeline(run: RunMetrics): Timeline {
  const sftSteps = [...run.sftLoss.map((p) => p.step), ...run.evals.filter((e) => e.phase === 'sft').map((e) => e.step)];
  const hasSft = sftSteps.length > 0;
  const hasRl = run.rl.length > 0 || run.evals.some((e) => e.phase === 'rl');
  if (hasSft && hasRl) {
    const rlStart = sftSteps.reduce((a, b) => Math.max(a, b));
    return {
      x: (phase, step) => (phase === 'rl' ? rlStart + step : step),
      title: `SFT step, then ${rlStart} + RL step`,
      rlStart,
    };
  }
  return { x: (_phase, step) => step, title: hasSft ? 'SFT step' : 'RL step' };
}
