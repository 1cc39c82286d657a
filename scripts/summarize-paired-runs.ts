/**
 * RL configs compared from one checkpoint over seeds (scripts/from-run-seeds.sh: tree rollouts against
 * independent sampling, merged timelines against per-call samples): per run, greedy and sampled
 * accuracy on the test problems before and after RL, the samples RL's steps built (after timeline
 * merging) and the tokens they trained, the tokens tree rollouts generated and the trainer's seconds; per config, the mean over seeds; and each config's
 * paired differences by seed (RL test accuracy) with every baseline config (those whose experiment
 * name contains --baseline), with standard errors. Grid runs (success per plan horizon) add each
 * config's success per H and the paired differences per H. A run given as <workflow id>:<policy>
 * (rft, filteredSft, moreSft, sftOnly) stands for that compared policy of the run instead of its RL
 * policy, as the config "<experiment>:<policy>", without RL's step figures.
 * Reads .data/runs/ (or DURABLE_RL_RUNS)/<workflow id>.input.json and .result.json (as scripts/main.ts writes them) and the
 * metrics file the result names.
 *   node dist/scripts/summarize-paired-runs.js --baseline <experiment name part> <workflow id>[:<policy>] [...]
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultRunsDir } from '../src/paths';
import { metricsFilePath } from '../activities/run-records';
import { parseMetricsJsonl } from '../src/report';
import type { ComparedPolicy, TrainingRunResult } from '../src/contracts/training-run';
import type { HorizonSuccess } from '../src/horizon/metrics';
import type { RunConfig } from '../src/config/schema';
import { meanSd, pairedSe, pct, pts } from './lib/summary-stats';

interface PairedRun {
  id: string;
  experiment: string;
  seed: number;
  sftOnly: number;
  /** Greedy test accuracy after RL (or of the policy the run was given with). */
  rl: number;
  rlSampled?: number;
  problems: number;
  /** Tokens tree rollouts generated (undefined: not a tree run). */
  generatedTokens?: number;
  /** Samples RL's steps built, after timeline merging (undefined: no timelines in the metrics). */
  samples?: number;
  trainedTokens?: number;
  /** The trainer's seconds over RL's steps (undefined: not in the metrics). */
  trainSeconds?: number;
  /** Grid runs: test success per plan horizon, SFT only and after RL. */
  byHorizon?: { sftOnly: Map<number, number>; rl: Map<number, number> };
}

const rates = (hs: readonly HorizonSuccess[]) => new Map(hs.map((h) => [h.horizon, h.rate]));

const POLICIES: readonly ComparedPolicy[] = ['rl', 'rft', 'filteredSft', 'moreSft', 'sftOnly'];

function load(spec: string): PairedRun {
  const [id = '', policy = 'rl'] = spec.split(':');
  const arm = POLICIES.find((p) => p === policy);
  if (arm === undefined) throw new Error(`${spec}: no compared policy '${policy}' (${POLICIES.join(', ')})`);
  const runs = defaultRunsDir();
  const read = <T>(file: string): T => {
    if (!fs.existsSync(file)) throw new Error(`${file} not found: did the run ${id} finish?`);
    return JSON.parse(fs.readFileSync(file, 'utf8')) as T;
  };
  const input = read<RunConfig>(path.join(runs, `${id}.input.json`));
  const result = read<TrainingRunResult>(path.join(runs, `${id}.result.json`));
  const c = result.comparison;
  if (!c || c.split !== 'test') throw new Error(`${id} has no test comparison (task.rl.testProblems 0, or rl.steps 0?)`);
  const chosen = c[arm];
  if (!chosen) throw new Error(`${id} has no ${arm} policy in its comparison`);
  const file = result.metricsFile ?? metricsFilePath(runs, id);
  // RL's step figures belong to the RL policy only.
  const steps = arm === 'rl' ? parseMetricsJsonl(fs.readFileSync(file, 'utf8'), file).rl : [];
  return {
    id: spec,
    experiment: arm === 'rl' ? input.experiment : `${input.experiment}:${arm}`,
    seed: input.seed,
    sftOnly: c.sftOnly.greedy.accuracy,
    rl: chosen.greedy.accuracy,
    ...(chosen.sampled ? { rlSampled: chosen.sampled.accuracy } : {}),
    problems: c.problems,
    ...(steps.some((s) => s.tree) ? { generatedTokens: steps.reduce((n, s) => n + (s.tree?.generatedTokens ?? 0), 0) } : {}),
    ...(steps.some((s) => s.timelines) ? { samples: steps.reduce((n, s) => n + (s.timelines?.merged ?? 0), 0) } : {}),
    ...(steps.length > 0 ? { trainedTokens: steps.reduce((n, s) => n + (s.tokensTrained ?? 0), 0) } : {}),
    ...(chosen.byHorizon && c.sftOnly.byHorizon ? { byHorizon: { sftOnly: rates(c.sftOnly.byHorizon), rl: rates(chosen.byHorizon) } } : {}),
    ...(steps.some((s) => s.seconds) ? { trainSeconds: steps.reduce((n, s) => n + (s.seconds?.train ?? 0), 0) } : {}),
  };
}

const USAGE = 'usage: summarize-paired-runs --baseline <experiment name part> <workflow id>[:<policy>] [...]';

/** A mean over runs of a per-run figure that some runs lack: '-' unless every run has it. */
function meanOf(rs: PairedRun[], figure: (r: PairedRun) => number | undefined, show: (x: number) => string): string {
  const xs = rs.map(figure);
  return xs.every((x) => x !== undefined) ? show(meanSd(xs as number[]).mean) : '-';
}

function main(): number {
  const args = process.argv.slice(2);
  const at = args.indexOf('--baseline');
  const baseline = at >= 0 ? args[at + 1] : undefined;
  const ids = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args;
  if (baseline === undefined || baseline.startsWith('--') || ids.length === 0) {
    console.error(USAGE);
    return 2;
  }
  const runs = ids.map(load);
  const count = (x: number | undefined) => (x === undefined ? '-' : String(Math.round(x)));
  console.log(`greedy accuracy on ${runs[0]!.problems} test problems per run (each about ±3 points):`);
  console.log('');
  console.log('| run | config | seed | SFT only | after RL | sampled after RL | generated tokens | samples (merged) | trained tokens | train s |');
  console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of runs) {
    const sampled = r.rlSampled === undefined ? '-' : pct(r.rlSampled);
    console.log(`| ${r.id} | ${r.experiment} | ${r.seed} | ${pct(r.sftOnly)} | ${pct(r.rl)} | ${sampled} | ${count(r.generatedTokens)} | ${count(r.samples)} | ${count(r.trainedTokens)} | ${count(r.trainSeconds)} |`);
  }
  const configs = [...new Set(runs.map((r) => r.experiment))];
  const of = (experiment: string) => runs.filter((r) => r.experiment === experiment);
  console.log('');
  console.log('| config | seeds | after RL, mean (sd) | sampled, mean | generated tokens, mean | samples (merged), mean | trained tokens, mean | train s, mean |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const e of configs) {
    const rs = of(e);
    const acc = meanSd(rs.map((r) => r.rl));
    const cells = [
      meanOf(rs, (r) => r.rlSampled, pct),
      meanOf(rs, (r) => r.generatedTokens, count),
      meanOf(rs, (r) => r.samples, count),
      meanOf(rs, (r) => r.trainedTokens, count),
      meanOf(rs, (r) => r.trainSeconds, count),
    ];
    console.log(`| ${e} | ${rs.map((r) => r.seed).join(', ')} | ${pct(acc.mean)} (${(100 * acc.sd).toFixed(1)}) | ${cells.join(' | ')} |`);
  }
  // Paired by seed: each config against each baseline config, on the seeds both ran.
  const baselines = configs.filter((e) => e.includes(baseline));
  if (baselines.length === 0) {
    console.error(`--baseline ${baseline}: no run's experiment name contains it (${configs.join(', ')})`);
    return 2;
  }
  // Each pair once: a baseline against the baselines listed before it is not repeated.
  const pairsOfConfigs = baselines.flatMap((b, i) => configs.filter((x) => x !== b && !baselines.slice(0, i).includes(x)).map((e) => [e, b] as const));
  const printPaired = (label: string, value: (r: PairedRun) => number | undefined) => {
    for (const [e, b] of pairsOfConfigs) {
      const pairs = of(e).flatMap((r) => {
        const base = of(b).find((x) => x.seed === r.seed);
        const [x, y] = [value(r), base ? value(base) : undefined];
        return x !== undefined && y !== undefined ? [x - y] : [];
      });
      if (pairs.length === 0) continue;
      const { mean, se } = pairedSe(pairs);
      console.log(`${e} − ${b}${label}: ${mean} pts (paired SE ${se}, n = ${pairs.length}; ${pairs.map(pts).join(', ')})`);
    }
  };
  console.log('');
  printPaired('', (r) => r.rl);
  const horizons = runs.every((r) => r.byHorizon) ? [...runs[0]!.byHorizon!.rl.keys()] : [];
  if (horizons.length > 0) {
    console.log('');
    console.log(`success per plan horizon, mean over seeds (${runs[0]!.problems / horizons.length} test layouts per H and run):`);
    console.log('');
    console.log(`| config | ${horizons.map((h) => `H = ${h}`).join(' | ')} |`);
    console.log(`|---|${horizons.map(() => '---:').join('|')}|`);
    const row = (name: string, rs: PairedRun[], which: 'sftOnly' | 'rl') =>
      console.log(`| ${name} | ${horizons.map((h) => meanOf(rs, (r) => r.byHorizon![which].get(h), pct)).join(' | ')} |`);
    row('SFT only (every run)', runs, 'sftOnly');
    for (const e of configs) row(e, of(e), 'rl');
    console.log('');
    for (const h of horizons) printPaired(`, H = ${h}`, (r) => r.byHorizon!.rl.get(h));
  }
  return 0;
}

process.exit(main());
