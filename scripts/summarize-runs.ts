/**
 * Summarises finished main-job runs side by side: accuracy on the RL distribution's test problems of
 * the SFT checkpoint, of each baseline (more SFT, filtered SFT, RFT) and of SFT + RL, per run and as
 * mean and spread over the runs (e.g. five seeds), with RL's paired differences, pass@k and tool use.
 * Reads .data/runs/ (or DURABLE_RL_RUNS)/<workflow id>.result.json.
 *   node dist/scripts/summarize-runs.js <workflow id> [<workflow id> ...]
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultRunsDir } from '../src/paths';
import type { Accuracy } from '../src/eval/episode-accuracy';
import { metricsFilePath } from '../activities/run-records';
import { sumHorizonMetricKeys, type HorizonSuccess } from '../src/horizon/metrics';
import { parseMetricsJsonl } from '../src/report';
import type { ComparedPolicy, ComparedResult, Comparison, TrainingRunResult } from '../src/contracts/training-run';
import { COMPARED_POLICIES, pairedOnProblems } from '../src/report/comparison';
import { meanSd, pairedSe, pct, pts } from './lib/summary-stats';

/** A success rate with its counts, e.g. "84.0% (84/100)". */
const successCell = (x: HorizonSuccess | undefined) => (x ? `${pct(x.rate)} (${x.success}/${x.total})` : '-');

function meanSpread(xs: number[]): string {
  const { mean, sd } = meanSd(xs);
  return `${pct(mean)} (sd ${pct(sd)}; ${xs.map(pct).join(', ')})`;
}

/**
 * The mean of per-run differences in points with its standard error (sd / sqrt(n)): runs of one
 * seed share their starting checkpoint and held-out layouts, so the pairing removes that noise.
 */
function pairedDifference(diffs: number[]): string {
  const { mean, se } = pairedSe(diffs);
  return `${mean} pts (paired SE ${se}; ${diffs.map(pts).join(', ')})`;
}

function main(): number {
  const ids = process.argv.slice(2);
  if (ids.length === 0) {
    console.error('usage: summarize-runs <workflow id> [...]');
    return 2;
  }
  const runs = ids.map((id) => {
    const file = path.join(defaultRunsDir(), `${id}.result.json`);
    if (!fs.existsSync(file)) throw new Error(`${file} not found: did \`bash scripts/main.sh --workflow-id ${id}\` finish?`);
    const r = JSON.parse(fs.readFileSync(file, 'utf8')) as TrainingRunResult;
    if (!r.comparison) throw new Error(`${id} has no comparison (rl.steps was 0?)`);
    return { id, c: r.comparison };
  });
  // The policies every run has, in reading order.
  const policies = COMPARED_POLICIES.filter(({ key }) => runs.every((r) => r.c[key]));
  const get = (c: Comparison, key: ComparedPolicy): ComparedResult => c[key]!;
  const split = runs.every((r) => r.c.split === 'test') ? 'test' : 'validation';
  const cell = (a?: Accuracy) => (a ? `${pct(a.accuracy)} ± ${pct(a.stderr)}` : '-');
  // Grid runs play held-out layouts once per plan horizon: their "problems" are episodes.
  const unit = runs.every((r) => r.c.sftOnly.byHorizon) ? 'episodes (held-out layouts × plan horizons)' : 'problems';
  console.log(`greedy accuracy on the ${split} ${unit} (${runs[0]!.c.problems} per run; ± one standard error):`);
  console.log('');
  console.log(`| run | ${policies.map((p) => p.label).join(' | ')} |`);
  console.log(`|---|${policies.map(() => '---:').join('|')}|`);
  for (const { id, c } of runs) console.log(`| ${id} | ${policies.map((p) => cell(get(c, p.key).greedy)).join(' | ')} |`);
  console.log('');
  console.log(`greedy, mean over ${runs.length} runs (sample sd; per run):`);
  for (const p of policies) console.log(`  ${p.label.padEnd(20)} ${meanSpread(runs.map((r) => get(r.c, p.key).greedy.accuracy))}`);
  if (runs.length > 1) {
    console.log('');
    console.log(`RL minus each policy, paired by run (mean over runs ± its standard error; per run${split === 'test' ? ', ± the paired standard error over its problems' : ''}):`);
    for (const p of policies.filter((x) => x.key !== 'rl')) {
      const diffs = runs.map((r) => r.c.rl.greedy.accuracy - get(r.c, p.key).greedy.accuracy);
      const perProblem = runs.map((r) => (r.c.rl.perProblem && get(r.c, p.key).perProblem ? pairedOnProblems(r.c.rl.perProblem, get(r.c, p.key).perProblem!) : undefined));
      const within = perProblem.every((d) => d) ? ` [per run on its problems: ${perProblem.map((d) => `${pts(d!.diff)} ± ${(100 * d!.stderr).toFixed(1)}`).join(', ')}]` : '';
      console.log(`  RL − ${p.label.replace(/^SFT \+ /, '').padEnd(14)} ${pairedDifference(diffs)}${within}`);
    }
    const baselines = policies.filter((x) => x.key !== 'rl');
    const strongest = baselines.reduce((best, p) => (meanSd(runs.map((r) => get(r.c, p.key).greedy.accuracy)).mean > meanSd(runs.map((r) => get(r.c, best.key).greedy.accuracy)).mean ? p : best));
    console.log(`  strongest baseline by mean: ${strongest.label}`);
  }
  if (runs.every((r) => r.c.rl.sampled)) {
    console.log('');
    console.log(`sampled at rl.temperature (pass@1), mean over ${runs.length} runs:`);
    for (const p of policies) if (runs.every((r) => get(r.c, p.key).sampled)) console.log(`  ${p.label.padEnd(20)} ${meanSpread(runs.map((r) => get(r.c, p.key).sampled!.accuracy))}`);
  }
  if (runs.every((r) => r.c.sftOnly.passAtK && r.c.rl.passAtK)) {
    const k = runs[0]!.c.rl.passAtK!.length;
    console.log('');
    console.log(`pass@k of sampled episodes (${k} per problem), mean over runs:`);
    for (const p of policies) {
      if (!runs.every((r) => get(r.c, p.key).passAtK)) continue;
      const at = (i: number) => pct(meanSd(runs.map((r) => get(r.c, p.key).passAtK![i]!)).mean);
      console.log(`  ${p.label.padEnd(20)} ${Array.from({ length: k }, (_, i) => `@${i + 1} ${at(i)}`).join('  ')}`);
    }
  }
  if (runs.every((r) => r.c.rl.tools)) {
    console.log('');
    console.log('tool use of greedy episodes, mean over runs: acts that called the calculator; accuracy when every act did (n) | when some act did not (n):');
    for (const p of policies) {
      if (!runs.every((r) => get(r.c, p.key).tools)) continue;
      const t = runs.map((r) => get(r.c, p.key).tools!);
      const m = (f: (x: (typeof t)[number]) => number) => meanSd(t.map(f)).mean;
      const n = (f: (x: (typeof t)[number]) => number) => t.reduce((a, x) => a + f(x), 0);
      console.log(`  ${p.label.padEnd(20)} ${pct(m((x) => x.actToolRate))}; ${pct(m((x) => x.everyActUsedTool.accuracy))} (${n((x) => x.everyActUsedTool.total)}) | ${pct(m((x) => x.someActWithoutTool.accuracy))} (${n((x) => x.someActWithoutTool.total)})`);
    }
  }
  const spent = (x: ComparedResult) => `${x.steps} steps ${x.seconds} s${x.trainedTokens !== undefined ? ` ${x.trainedTokens} tokens` : ''}`;
  const budget = runs.map((r) => policies.filter((p) => get(r.c, p.key).steps !== undefined).map((p) => `${p.label.replace(/^SFT \+ /, '')} ${spent(get(r.c, p.key))}`).join(', '));
  console.log('');
  console.log(`training per run: ${budget.join('; ')}`);
  if (runs.every((x) => x.c.sftOnly.byHorizon)) {
    printByHorizon(runs.map((x) => x.c), policies);
    printRolloutByHorizon(ids);
  }
  return 0;
}

/**
 * Grid world: greedy success per plan horizon on the held-out layouts (the test part when the runs
 * have one) of every compared policy (SFT only, each baseline, SFT + RL), per run and as the mean
 * over runs with RL's paired differences.
 */
function printByHorizon(comparisons: Comparison[], policies: ReadonlyArray<{ key: ComparedPolicy; label: string }>): void {
  const horizons = comparisons[0]!.sftOnly.byHorizon!.map((h) => h.horizon);
  const at = (rows: HorizonSuccess[] | undefined, h: number) => rows?.find((x) => x.horizon === h);
  console.log('');
  console.log(`greedy success per plan horizon on held-out layouts${comparisons.every((c) => c.split === 'test') ? ' (test part)' : ''}:`);
  console.log(`| run | H | ${policies.map((p) => p.label).join(' | ')} |`);
  console.log(`|---|---:|${policies.map(() => '---:').join('|')}|`);
  comparisons.forEach((c, i) => {
    for (const h of horizons) console.log(`| ${i + 1} | ${h} | ${policies.map((p) => successCell(at(c[p.key]?.byHorizon, h))).join(' | ')} |`);
  });
  if (comparisons.length < 2) return;
  for (const h of horizons) {
    const rates = (key: ComparedPolicy) => comparisons.map((c) => at(c[key]?.byHorizon, h)?.rate ?? NaN);
    const cells = policies.map((p) => `${p.label} ${meanSpread(rates(p.key))}`);
    const diffs = policies.filter((p) => p.key !== 'rl').map((p) => `RL − ${p.label.replace(/^SFT \+ /, '')} ${pairedDifference(rates('rl').map((x, i) => x - rates(p.key)[i]!))}`);
    console.log(`H=${h}: ${cells.join('; ')}`);
    console.log(`     ${diffs.join('; ')}`);
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
    const file = metricsFilePath(defaultRunsDir(), id);
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
