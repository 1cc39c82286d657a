/**
 * Every benchmark runs in a smoke mode (tiny sizes, seconds each): the documented commands keep
 * working, and each still prints its table. Numbers from these runs mean nothing; docs/benchmarks.md
 * has the real ones and their commands.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';

/** Each bench's smoke arguments, and what its output must show (a markdown table row unless named). */
const TABLE_ROW = /^\|.*\|\s*$/m;
const SMOKE: Array<[script: string, args: string[], shows?: RegExp | RegExp[]]> = [
  ['generate', ['--batches', '1,4', '--tokens', '8', '--repeat', '1']],
  ['train', ['--episodes', '4', '--repeat', '1'], [/^\| GRPO update, tfjs \| [\d.]+ \| [\d,]+ \|/m, /^\| GRPO update, torch \| [\d.]+ \| [\d,]+ \|/m, /^torch \/ tfjs tokens\/s: SFT [\d.]+x, GRPO update [\d.]+x$/m]],
  ['merge', ['--sizes', '100', '--reps', '1', '--pairwise-max', '100', '--pairwise-reps', '1']],
  ['hop-latency', ['--hops', '5', '--repeat', '1']],
  [
    'planact-overhead',
    ['--quick', '--batch-requests', 'true,false,local/2'],
    [
      /^\| 2 \| batched \| [\d.]+ \| [\d.]+ \| -?\d+ \| -?[\d.]+% \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \|$/m,
      /^\| 2 \| one each \| [\d.]+ \|/m,
      /^\| 2 \| local, 2 a workflow \| [\d.]+ \|/m,
      // Per episode: workflows, history events, activities, workflow tasks, startup.
      /^\| 2 \| batched \| 2 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+ \|$/m,
      // The orchestration worker by thread: main, workflow thread, the rest.
      /^\| 2 \| local, 2 a workflow \| \d+ \| \d+ \| \d+ \|$/m,
      /^\| p50 \(ms\) \| p99 \(ms\) \|/m,
    ],
  ],
  [
    'gateway',
    // In-process clients at 1/16/64; then 2 client processes × 2 against the engine in-process; then
    // 2 small clients alone and beside a 3,000-prompt completions request (aborted after its window).
    ['--requests', '4', '--rounds', '1', '--procs', '2', '--clients-per-proc', '2', '--seconds', '1', '--warm-up', '0.2', '--fair-clients', '2', '--big-prompts', '3000'],
    [
      /^\| 64 \| gateway \| [\d.]+ \|/m,
      // A loaded machine may finish no request in a 1 s window: n/a, but the rows are there.
      /^\| gateway, 2 processes × 2 clients \| 4 \| ([\d.]+|n\/a) \| ([\d.]+|n\/a) \| [\d.]+ \| \d+ \|/m,
      /^\| gateway \/ engine \| \| ([\d.]+x|n\/a) \| ([\d.]+x|n\/a) \| [\d.]+x \| [\d.]+x \|/m,
      /^\| alone \| ([\d.]+|n\/a) \| ([\d.]+|n\/a) \| [\d.]+ \|/m,
      /^\| with the 3000-prompt request in flight \| ([\d.]+|n\/a) \| ([\d.]+|n\/a) \| [\d.]+ \|/m,
      /^\| with \/ alone \| /m,
      /The 3000-prompt request: all its prompts queued \d+ ms after it was sent/,
    ],
  ],
  ['rl-step', ['--sft-steps', '2', '--rl-steps', '1'], /step +median [\d.]+/],
  // The RL phase once per rl.microBatch.byLength value, from one SFT checkpoint.
  ['rl-step', ['--sft-steps', '2', '--rl-steps', '1', '--by-length', 'false,true'], [/^\| false \| [\d.]+ \| [\d.]+ \| \d+ \| \d+ \| [\d.]+ \|/m, /^\| true \| [\d.]+ \|/m]],
  ['tree', ['--sft-steps', '4', '--rollouts', '1', '--leaves', '4', '--initial', '2']],
  ['scale', ['--repeat', '1', '--blob-sizes', '1024', '--blob-reps', '2', '--prompts', '2']],
  ['engine', ['--smoke']],
  // One seed, the synchronous schedule and k = 1, with a simulated latency (tiny model, two RL steps).
  // Faults (trainer, inference worker, server) in a tiny async run: nothing lost or duplicated.
  ['chaos', ['--tiny', '--fault-every', '4'], [/^\| faulty \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \d+% \| \d+% \| (\d+) \| \1 \| 0 \| 0 \| 0 \| [1-9]\d* \|/m, /^\| training worker \| \d+ \|/m, /^attempts of killed workers failed by their replacements at start .*: \d+$/m, /^inference worker killed \d+×, holding (no attempt at death$|\d+ attempts at death: (every|NOT every) one retried .*within 5 s of its replacement's start)/m]],
  // A process per queue (the others niced for the trainer), all in one, and the default: the main job's.
  ['async', ['--tiny', '--modes', '0,1', '--layout', 'processes', '--simulate-gpu-ms', '5'], [/^\| 1 \| 0 \| [\d.]+ \| \d+ \| 1\.00× \|/m, /^\| 1 \| [\d.]+× ± [\d.]+ \|/m, /workers in one process per task queue, the other workers' processes, the dev server at nice \+10;/]],
  ['async', ['--tiny', '--modes', '0,1', '--layout', 'one-process'], [/^\| 1 \| 1 \| [\d.]+ \| \d+ \| [\d.]+× \|/m, /workers all in one process;/]],
  // The default layout: the trainer apart, the rest niced; the CPU per RL step by process.
  [
    'async',
    ['--tiny', '--modes', '0,1', '--simulate-gpu-ms', '5'],
    [/^\| 1 \| 1 \| [\d.]+ \| \d+ \| [\d.]+× \|/m, /but the trainer, in one of its own \(the main job's layout for rl\.async\); the bench's process and the dev server at nice \+10;/, /^\| 1 \| 1 \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| \|$/m],
  ],
];

// Named by the command line: one bench may be smoked in two ways.
const CASES = SMOKE.map(([script, args, shows]) => ({ command: `${script} ${args.join(' ')}`, script, args, shows }));

test.each(CASES)('bench $command runs and prints its table', ({ script, args, shows = TABLE_ROW }) => {
  const r = spawnSync(process.execPath, [path.join(REPO_ROOT, 'dist', 'bench', `${script}.js`), ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 240_000,
    env: { ...process.env, FORCE_COLOR: '0' },
  });
  const output = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0) throw new Error(`bench ${script} exited ${r.status ?? r.signal}:\n${output.slice(-3000)}`);
  for (const pattern of Array.isArray(shows) ? shows : [shows]) expect(output).toMatch(pattern);
}, 250_000);
