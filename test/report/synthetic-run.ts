/** A small made-up run shaped like a real one: SFT with falling loss, then GRPO with noisy, rising reward. */
import { formatMetricsLine, type MetricsLine } from '../../src/report/run-metrics';

/** Deterministic noise in [-1, 1) so the picture and the assertions never change. */
function noise(i: number): number {
  const x = Math.sin(i * 12.9898 + 78.233) * 43758.5453;
  return 2 * (x - Math.floor(x)) - 1;
}

export function syntheticRunLines(options: { sftSteps?: number; rlSteps?: number } = {}): MetricsLine[] {
  const sftSteps = options.sftSteps ?? 300;
  const rlSteps = options.rlSteps ?? 120;
  const lines: MetricsLine[] = [];
  for (let step = 10; step <= sftSteps; step += 10) {
    lines.push({ kind: 'sft-loss', step, loss: 0.35 + 2.2 * Math.exp(-step / 60) + 0.03 * noise(step) });
    if (step % 50 === 0 || step === sftSteps) {
      const acc = 0.45 * (1 - Math.exp(-step / 120));
      lines.push({ kind: 'eval', step, phase: 'sft', greedyAccuracy: acc, sampledAccuracy: acc * 0.8 });
    }
  }
  for (let step = 1; step <= rlSteps; step++) {
    const trend = 0.3 + 0.35 * (1 - Math.exp(-step / 50));
    lines.push({
      kind: 'rl',
      step,
      meanReward: trend + 0.12 * noise(1000 + step),
      accuracy: Math.min(1, Math.max(0, trend + 0.1 * noise(2000 + step))),
      loss: 0.02 * noise(3000 + step) - 0.005,
      clipFrac: 0.05 + 0.03 * Math.abs(noise(4000 + step)),
      approxKl: 0.004 + 0.003 * Math.abs(noise(5000 + step)),
      entropy: 0.9 - step / (rlSteps * 3),
      responseLength: 40 + 5 * noise(6000 + step),
      seconds: { rollout: 4.1, train: 2.3, publish: 0.4 },
    });
    if (step % 20 === 0 || step === rlSteps) {
      const acc = 0.41 + 0.25 * (1 - Math.exp(-step / 60));
      lines.push({ kind: 'eval', step, phase: 'rl', greedyAccuracy: acc, sampledAccuracy: acc * 0.9, ...(step === rlSteps ? { label: 'final' } : {}) });
    }
  }
  if (sftSteps > 0) {
    lines.push({ kind: 'baseline', label: 'SFT only', accuracy: 0.41, stderr: 0.03 });
    lines.push({ kind: 'baseline', label: 'SFT + more SFT', accuracy: 0.47, stderr: 0.03 });
  }
  return lines;
}

export function syntheticRunJsonl(options: { sftSteps?: number; rlSteps?: number } = {}): string {
  return syntheticRunLines(options).map(formatMetricsLine).join('\n') + '\n';
}
