/**
 * Tree rollouts against independent sampling (scripts/tree-vs-independent.sh): per run, greedy and
 * sampled accuracy on the test problems before and after RL, and the tokens RL generated and
 * trained; per config, the mean over seeds; and each config's paired differences by seed (RL test
 * accuracy) with the independent-sampling configs, with standard errors.
 * Reads .data/runs/<workflow id>.input.json, .result.json and the run's metrics file.
 *   node dist/scripts/summarize-tree-runs.js <workflow id> [...]
 */
import fs from 'node:fs';
import path from 'node:path';
import { DATA_DIR } from '../src/paths';
import { metricsFilePath } from '../activities/run-records';
import { parseMetricsJsonl } from '../src/report';
import type { TrainingRunResult } from '../src/contracts/training-run';
import type { RunConfig } from '../src/config/schema';
import { meanSd, pct, pts } from './lib/summary-stats';

interface TreeRun {
  id: string;
  experiment: string;
  seed: number;
  sftOnly: number;
  rl: number;
  rlSampled?: number;
  problems: number;
  generatedTokens: number;
  trainedTokens: number;
}

function load(id: string): TreeRun {
  const runs = path.join(DATA_DIR, 'runs');
  const read = <T>(file: string): T => {
    if (!fs.existsSync(file)) throw new Error(`${file} not found: did the run ${id} finish?`);
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  };
  const input = read<RunConfig>(path.join(runs, `${id}.input.json`));
  const result = read<TrainingRunResult>(path.join(runs, `${id}.result.json`));
  const c = result.comparison;
  if (!c || c.split !== 'test') throw new Error(`${id} has no test comparison (task.rl.testProblems 0, or rl.steps 0?)`);
  const file = metricsFilePath(runs, id);
  const steps = parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file).rl;
  return {
    id,
    experiment: input.experiment,
    seed: input.seed,
    sftOnly: c.sftOnly.greedy.accuracy,
    rl: c.rl.greedy.accuracy,
    ...(c.rl.sampled ? { rlSampled: c.rl.sampled.accuracy } : {}),
    problems: c.problems,
    generatedTokens: steps.reduce((n, s) => n + (s.tree?.generatedTokens ?? 0), 0),
    trainedTokens: steps.reduce((n, s) => n + (s.tokensTrained ?? 0), 0),
  };
}

function main(): number {
  const ids = process.argv.slice(2);
  if (ids.length === 0) {
    console.error('usage: summarize-tree-runs <workflow id> [...]');
    return 2;
  }
  const runs = ids.map(load);
  console.log(`greedy accuracy on ${runs[0]!.problems} test problems per run (each about ±3 points):`);
  console.log('');
  console.log('| run | config | seed | SFT only | after RL | sampled after RL | generated tokens | trained tokens |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|');
  for (const r of runs) console.log(`| ${r.id} | ${r.experiment} | ${r.seed} | ${pct(r.sftOnly)} | ${pct(r.rl)} | ${r.rlSampled === undefined ? '-' : pct(r.rlSampled)} | ${r.generatedTokens} | ${r.trainedTokens} |`);
  const configs = [...new Set(runs.map((r) => r.experiment))];
  const of = (experiment: string) => runs.filter((r) => r.experiment === experiment);
  console.log('');
  console.log('| config | seeds | after RL, mean (sd) | sampled, mean | generated tokens, mean | trained tokens, mean |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const e of configs) {
    const rs = of(e);
    const acc = meanSd(rs.map((r) => r.rl));
    const sampled = rs.every((r) => r.rlSampled !== undefined) ? pct(meanSd(rs.map((r) => r.rlSampled!)).mean) : '-';
    console.log(`| ${e} | ${rs.map((r) => r.seed).join(', ')} | ${pct(acc.mean)} (${(100 * acc.sd).toFixed(1)}) | ${sampled} | ${Math.round(meanSd(rs.map((r) => r.generatedTokens)).mean)} | ${Math.round(meanSd(rs.map((r) => r.trainedTokens)).mean)} |`);
  }
  // Paired by seed: each config against each independent-sampling config, on the seeds both ran.
  const baselines = configs.filter((e) => e.includes('independent'));
  console.log('');
  baselines.forEach((b, i) => {
    // Each pair once: an independent config against the ones listed before it is not repeated.
    for (const e of configs.filter((x) => x !== b && !baselines.slice(0, i).includes(x))) {
      const pairs = of(e).flatMap((r) => {
        const base = of(b).find((x) => x.seed === r.seed);
        return base ? [r.rl - base.rl] : [];
      });
      if (pairs.length === 0) continue;
      const { mean, sd } = meanSd(pairs);
      console.log(`${e} − ${b}: ${pts(mean)} pts (paired SE ${((100 * sd) / Math.sqrt(pairs.length)).toFixed(1)}, n = ${pairs.length}; ${pairs.map(pts).join(', ')})`);
    }
  });
  return 0;
}

process.exit(main());
