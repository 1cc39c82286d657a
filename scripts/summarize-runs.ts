/**
 * Summarises finished main-job runs side by side: held-out accuracy on the RL distribution of the
 * SFT checkpoint, of that checkpoint given RL's wall time of more SFT, and of SFT + RL, per run and
 * as mean and spread over the runs (e.g. three seeds). Reads .data/runs/<workflow id>.result.json.
 *   node dist/scripts/summarize-runs.js <workflow id> [<workflow id> ...]
 */
import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR } from '../src/paths';
import type { Accuracy } from '../src/eval/episode-accuracy';
import { metricsFilePath } from '../activities/run-records';
import { sumHorizonMetricKeys, type HorizonSuccess } from '../src/horizon/metrics';
import { parseMetricsJsonl } from '../src/report';
import type { Comparison, TrainingRunResult } from '../src/contracts/training-run';

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

/** A success rate with its counts, e.g. "84.0% (84/100)". */
const successCell = (x: HorizonSuccess | undefined) => (x ? `${pct(x.rate)} (${x.success}/${x.total})` : '-');

/** Mean and sample (n - 1) standard deviation; sd 0 for one value. */
function meanSd(xs: readonly number[]): { mean: number; sd: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd };
}

function meanSpread(xs: number[]): string {
  const { mean, sd } = meanSd(xs);
  return `${pct(mean)} (sd ${pct(sd)}; ${xs.map(pct).join(', ')})`;
}

/**
 * The mean of per-run differences in points with its standard error (sd / sqrt(n)): runs of one
 * seed share their starting checkpoint and held-out layouts, so the pairing removes that noise.
 */
function pairedDifference(diffs: number[]): string {
  const { mean, sd } = meanSd(diffs);
  const pts = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(1)}`;
  return `${pts(mean)} pts (paired SE ${((100 * sd) / Math.sqrt(diffs.length)).toFixed(1)}; ${diffs.map(pts).join(', ')})`;
}

function main(): number {
  const ids = process.argv.slice(2);
  if (ids.length === 0) {
    console.error('usage: summarize-runs <workflow id> [...]');
    return 2;
  }
  const runs = ids.map((id) => {
    const file = path.join(DATA_DIR, 'runs', `${id}.result.json`);
    if (!fs.existsSync(file)) throw new Error(`${file} not found: did \`bash scripts/main.sh --workflow-id ${id}\` finish?`);
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as TrainingRunResult;
    if (!r.comparison) throw new Error(`${id} has no comparison (rl.steps was 0?)`);
    return { id, c: r.comparison };
  });
  const cell = (a?: Accuracy) => (a ? `${pct(a.accuracy)} ± ${pct(a.stderr)}` : '-');
  console.log(`| run | SFT only | SFT + more SFT | SFT + RL | RL − better baseline |`);
  console.log('|---|---:|---:|---:|---:|');
  for (const { id, c } of runs) {
    const better = Math.max(c.sftOnly.greedy.accuracy, c.moreSft?.greedy.accuracy ?? 0);
    console.log(`| ${id} | ${cell(c.sftOnly.greedy)} | ${cell(c.moreSft?.greedy)} | ${cell(c.rl.greedy)} | ${((c.rl.greedy.accuracy - better) * 100).toFixed(1)} pts |`);
  }
  console.log('');
  console.log(`greedy, mean over ${runs.length} runs (sample sd; per run):`);
  console.log(`  SFT only        ${meanSpread(runs.map((r) => r.c.sftOnly.greedy.accuracy))}`);
  if (runs.every((r) => r.c.moreSft)) console.log(`  SFT + more SFT  ${meanSpread(runs.map((r) => r.c.moreSft!.greedy.accuracy))}`);
  console.log(`  SFT + RL        ${meanSpread(runs.map((r) => r.c.rl.greedy.accuracy))}`);
  if (runs.length > 1) {
    console.log(`  RL − SFT only   ${pairedDifference(runs.map((r) => r.c.rl.greedy.accuracy - r.c.sftOnly.greedy.accuracy))}`);
    if (runs.every((r) => r.c.moreSft)) console.log(`  RL − more SFT   ${pairedDifference(runs.map((r) => r.c.rl.greedy.accuracy - r.c.moreSft!.greedy.accuracy))}`);
  }
  if (runs.every((r) => r.c.rl.sampled && r.c.sftOnly.sampled)) {
    console.log(`sampled (rl.temperature), mean over ${runs.length} runs:`);
    console.log(`  SFT only        ${meanSpread(runs.map((r) => r.c.sftOnly.sampled!.accuracy))}`);
    if (runs.every((r) => r.c.moreSft?.sampled)) console.log(`  SFT + more SFT  ${meanSpread(runs.map((r) => r.c.moreSft!.sampled!.accuracy))}`);
    console.log(`  SFT + RL        ${meanSpread(runs.map((r) => r.c.rl.sampled!.accuracy))}`);
  }
  const budget = runs.map((r) => `${r.c.rl.steps} RL steps in ${r.c.rl.seconds} s vs ${r.c.moreSft?.steps ?? '-'} more SFT steps in ${r.c.moreSft?.seconds ?? '-'} s`);
  console.log('');
  console.log(`compute per run: ${budget.join('; ')}`);
  if (runs.every((x) => x.c.sftOnly.byHorizon)) {
    printByHorizon(runs.map((x) => x.c));
    printRolloutByHorizon(ids);
  }
  return 0;
}

/**
 * Grid world: greedy success per plan horizon on the held-out layouts, at the start of RL (SFT
 * only), after the more-SFT baseline and after RL, per run and as the mean over runs.
 */
function printByHorizon(comparisons: Comparison[]): void {
  const horizons = comparisons[0]!.sftOnly.byHorizon!.map((h) => h.horizon);
  const at = (rows: HorizonSuccess[] | undefined, h: number) => rows?.find((x) => x.horizon === h);
  console.log('');
  console.log('greedy success per plan horizon on held-out layouts:');
  console.log('| run | H | SFT only | SFT + more SFT | SFT + RL |');
  console.log('|---|---:|---:|---:|---:|');
  comparisons.forEach((c, i) => {
    for (const h of horizons) console.log(`| ${i + 1} | ${h} | ${successCell(at(c.sftOnly.byHorizon, h))} | ${successCell(at(c.moreSft?.byHorizon, h))} | ${successCell(at(c.rl.byHorizon, h))} |`);
  });
  if (comparisons.length < 2) return;
  for (const h of horizons) {
    const mean = (get: (c: Comparison) => HorizonSuccess[] | undefined) => {
      const xs = comparisons.map((c) => at(get(c), h)?.rate);
      return xs.every((x) => x !== undefined) ? meanSpread(xs as number[]) : '-';
    };
    console.log(`H=${h}: SFT only ${mean((c) => c.sftOnly.byHorizon)}; more SFT ${mean((c) => c.moreSft?.byHorizon)}; RL ${mean((c) => c.rl.byHorizon)}`);
  }
}

/**
 * Grid world: success per plan horizon of the RL rollouts themselves (training layouts, sampled at
 * rl.temperature), over the first and the last third of the steps: which horizons RL improved,
 * from many more episodes than an evaluation plays (8 layouts × 2 episodes per H a step).
 */
function printRolloutByHorizon(ids: string[]): void {
  console.log('');
  console.log('success per plan horizon in the RL rollouts (sampled), first third of the steps → last third:');
  for (const id of ids) {
    const file = metricsFilePath(path.join(DATA_DIR, 'runs'), id);
    if (!fs.existsSync(file)) continue;
    const steps = parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file).rl.flatMap((step) => (step.horizon ? [step.horizon] : []));
    const third = Math.max(1, Math.floor(steps.length / 3));
    const first = sumHorizonMetricKeys(steps.slice(0, third));
    const last = sumHorizonMetricKeys(steps.slice(-third));
    const cells = first.map((f) => `H=${f.horizon} ${successCell(f)} → ${successCell(last.find((l) => l.horizon === f.horizon))}`);
    console.log(`  ${id}: ${cells.join('; ')}`);
  }
}

process.exit(main());
