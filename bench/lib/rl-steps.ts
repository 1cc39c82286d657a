/**
 * Every RL step a benchmark's run recorded, read from the run's metrics file. The run's result keeps
 * only its last steps (histories stay bounded), so a benchmark of more steps than that would be
 * judged on its tail if it read the result.
 */
import fs from 'node:fs';
import { metricsFilePath } from '../../activities/run-records';
import { parseMetricsJsonl } from '../../src/report/parse-metrics';
import type { RlStepMetrics } from '../../src/report/run-metrics';

/** The run's RL steps, one each; throws unless the file holds exactly `expected` distinct steps. */
export function rlStepsOfRun(runsDir: string, runId: string, expected: number): RlStepMetrics[] {
  const file = metricsFilePath(runsDir, runId);
  const rl = parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file).rl;
  const numbers = rl.map((p) => p.step);
  if (new Set(numbers).size !== numbers.length || numbers.length !== expected) {
    throw new Error(`${file}: expected one line for each of ${expected} RL steps, found steps ${numbers.join(',')}`);
  }
  return rl;
}

/** A step's wall seconds: publish, rollout and train (the phases the schedule overlaps). */
export function stepWallSeconds(p: RlStepMetrics): number {
  if (!p.seconds) throw new Error(`RL step ${p.step} has no seconds in the metrics file`);
  return p.seconds.publish + p.seconds.rollout + p.seconds.train;
}
