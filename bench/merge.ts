/**
 * Timeline merging: the trie (src/timeline/merge.ts) against the pairwise rule
 * (src/timeline/merge-pairwise.ts) on synthetic Plan/Act batches (bench/lib/synthetic-timelines.ts),
 * both measured in the same process on the same input, median of several repetitions.
 *
 *   npm run build && npm run bench:merge [-- --sizes 100,1000,10000,100000] [--reps 5]
 *                                        [--pairwise-max 10000] [--pairwise-reps 3] [--seed 1]
 *
 * Each timed run starts after a full garbage collection. Pairwise is O(n²): above --pairwise-max it is not run, and the table says so next to an n²
 * extrapolation from the largest size measured (marked as such, not a measurement).
 */
import v8 from 'node:v8';
import vm from 'node:vm';
import { Command, InvalidArgumentError } from 'commander';
import { mergeTimelines, mergeTimelinesPairwise, type MergeOptions, type MergeResult, type Timeline } from '../src/timeline';
import { syntheticTimelines } from './lib/synthetic-timelines';

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

function sizeList(value: string): number[] {
  return value.split(',').map((s) => positiveInt(s.trim()));
}

interface MergeBenchOptions {
  sizes: number[];
  reps: number;
  pairwiseMax: number;
  pairwiseReps: number;
  seed: number;
}

const TEXT: MergeOptions = { compareBy: 'text', ignoreTools: true, snapDetection: false };
const TOKEN: MergeOptions = { ...TEXT, compareBy: 'token' };

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

// A full collection before every timed run, so no run pays for the garbage of the one before.
v8.setFlagsFromString('--expose-gc');
const collectGarbage = vm.runInNewContext('gc') as () => void;

/** Median milliseconds of `reps` runs, and the last run's result. */
function time(reps: number, run: () => MergeResult): { ms: number; result: MergeResult } {
  const ms: number[] = [];
  let result: MergeResult | undefined;
  for (let r = 0; r < reps; r++) {
    result = undefined;
    collectGarbage();
    const t0 = performance.now();
    result = run();
    ms.push(performance.now() - t0);
  }
  return { ms: median(ms), result: result! };
}

const fmtMs = (ms: number): string => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2));
const fmtInt = (n: number): string => n.toLocaleString('en-US');

function sameSurvivors(a: MergeResult, b: MergeResult): boolean {
  return JSON.stringify(a.timelines) === JSON.stringify(b.timelines) && JSON.stringify(a.absorbed) === JSON.stringify(b.absorbed);
}

function main(): void {
  const opts = new Command()
    .name('bench:merge')
    .description('Timeline merging: trie versus pairwise comparison')
    .option('--sizes <n,n,...>', 'batch sizes in timelines', sizeList, [100, 1_000, 10_000, 100_000])
    .option('--reps <n>', 'repetitions per trie measurement (median reported)', positiveInt, 5)
    .option('--pairwise-max <n>', 'largest size the pairwise rule is run on', positiveInt, 10_000)
    .option('--pairwise-reps <n>', 'repetitions per pairwise measurement', positiveInt, 3)
    .option('--seed <n>', 'seed of the synthetic episodes', positiveInt, 1)
    .parse()
    .opts<MergeBenchOptions>();

  // Warm both implementations up so the first size is not timing the JIT.
  const warm = syntheticTimelines({ timelines: 300, seed: opts.seed + 1 });
  for (let r = 0; r < 5; r++) {
    mergeTimelines(warm, TEXT);
    mergeTimelines(warm, TOKEN);
    mergeTimelinesPairwise(warm, TEXT);
  }

  console.log(`node ${process.version}; synthetic Plan/Act batches (seed ${opts.seed}); compareBy text unless noted, ignoreTools on; median of ${opts.reps} trie / ${opts.pairwiseReps} pairwise runs`);
  console.log('');
  console.log('| timelines | episodes | survivors (text / token) | tokens in → out (text) | trie, text (ms) | trie, token (ms) | pairwise, text (ms) | pairwise / trie |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
  let measured: { n: number; ms: number } | undefined;
  const notes: string[] = [];
  for (const n of opts.sizes) {
    const input: Timeline[] = syntheticTimelines({ timelines: n, seed: opts.seed });
    const episodes = input.filter((t) => t.agent === 'summarizer').length;
    const text = time(opts.reps, () => mergeTimelines(input, TEXT));
    const token = time(opts.reps, () => mergeTimelines(input, TOKEN));
    let pairwiseCell: string;
    let ratioCell: string;
    if (n <= opts.pairwiseMax) {
      const pairwise = time(opts.pairwiseReps, () => mergeTimelinesPairwise(input, TEXT));
      if (!sameSurvivors(text.result, pairwise.result)) throw new Error(`trie and pairwise merges disagree at ${n} timelines`);
      pairwiseCell = fmtMs(pairwise.ms);
      ratioCell = `${(pairwise.ms / text.ms).toFixed(0)}×`;
      measured = { n, ms: pairwise.ms };
    } else if (measured !== undefined) {
      const estimate = measured.ms * (n / measured.n) ** 2;
      pairwiseCell = `not run (≈${fmtInt(Math.round(estimate / 1000))} s by n² from ${fmtInt(measured.n)})`;
      ratioCell = `≈${(estimate / text.ms).toFixed(0)}× (extrapolated)`;
      notes.push(`pairwise at ${fmtInt(n)} timelines was not run (above --pairwise-max ${fmtInt(opts.pairwiseMax)}); its cell is an n² extrapolation, not a measurement`);
    } else {
      pairwiseCell = 'not run';
      ratioCell = '-';
    }
    const s = text.result.stats;
    console.log(
      `| ${fmtInt(n)} | ${fmtInt(episodes)} | ${fmtInt(s.timelinesOut)} / ${fmtInt(token.result.stats.timelinesOut)} | ${fmtInt(s.tokensIn)} → ${fmtInt(s.tokensOut)} | ${fmtMs(text.ms)} | ${fmtMs(token.ms)} | ${pairwiseCell} | ${ratioCell} |`,
    );
  }
  if (notes.length > 0) {
    console.log('');
    for (const note of notes) console.log(`note: ${note}`);
  }
}

main();
