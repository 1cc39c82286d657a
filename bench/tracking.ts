/**
 * What experiment tracking costs a main-job RL step, side by side in one run: one SFT run of the
 * default config's model, then its RL phase from that checkpoint again and again, tracking off and
 * on in turn (on: tracking.mlflow against a real `mlflow server` started here, and
 * tracking.tensorboard; --tracking mlflow or tensorboard for one of them), the order alternating
 * per pair (off/on, on/off, ...) so drift in the machine's load falls on both alike. Every run plays
 * the same seeded steps. A step's time is read from the run's history: from one RL step's metrics
 * line (appendMetrics scheduled) to the next, so it holds everything a step does, the workflow's
 * own work and the trackers' activities included; the first step (a new engine, Adam afresh) is
 * left out. Reports each run's median step, the medians of the off and on runs, their ratio, the
 * ratio of each pair (its spread), and, over the same steps, the CPU all of it used per RL step (this
 * process with every worker, the dev server, the MLflow server's processes, TensorBoard's writer;
 * read when the run's progress reaches RL step 1 and step N), of which the trackers' own processes:
 * on a shared machine CPU seconds move much less with the load than wall seconds do.
 *
 *   npm run build && npm run bench:tracking [-- --pairs 4 --sft-steps 100 --rl-steps 6 --tracking both|mlflow|tensorboard]
 *   --tiny: a seconds-long smoke run (tiny model, three RL steps, two pairs).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadRunConfig } from '../src/config/load';
import type { RunConfigInput } from '../src/config/schema';
import { REPO_ROOT } from '../src/paths';
import { startLocalStack } from '../scripts/lib/local-stack';
import { startMlflowOnFreePort } from '../scripts/lib/mlflow-server';
import { progressQuery } from '../workflows/messages';
import { TASK_QUEUES } from '../workflows/task-queues';
import { arg } from './lib/args';
import { ownCpuSeconds, processCpuSeconds, processTreeCpuSeconds } from './lib/cpu';

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** When each RL step's metrics line was scheduled for the metrics file (ms, workflow history time), in order. */
async function rlLineTimes(client: Client, workflowId: string): Promise<number[]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const out: number[] = [];
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'appendMetrics') continue;
    const input = JSON.parse(Buffer.from(a.input!.payloads![0]!.data!).toString()) as { lines: Array<{ kind: string }> };
    if (input.lines.some((l) => l.kind === 'rl')) out.push(Number(e.eventTime?.seconds ?? 0) * 1000 + Number(e.eventTime?.nanos ?? 0) / 1e6);
  }
  return out;
}

/** CPU seconds the trackers' own processes have used: the MLflow server's process tree, and TensorBoard's writer (a child of this process). */
function trackerCpuSeconds(mlflowPid: number): { mlflow: number; tensorboard: number } {
  const tb = fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('tensorboard_writer.py') && fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1] === String(process.pid);
    } catch {
      return false;
    }
  });
  return { mlflow: processTreeCpuSeconds(mlflowPid), tensorboard: tb.reduce((n, p) => n + processTreeCpuSeconds(Number(p)), 0) };
}

interface RunOutcome {
  tracked: boolean;
  /** Median seconds per RL step, steps 2..N. */
  step: number;
  steps: number[];
  /** CPU seconds per RL step over steps 2..N: everything, and the trackers' own processes. */
  cpuPerStep: number;
  trackerCpuPerStep: { mlflow: number; tensorboard: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const tiny = process.argv.includes('--tiny');
  const pairs = Number(arg('pairs', tiny ? '2' : '4'));
  const trackers = arg('tracking', 'both');
  if (!['both', 'mlflow', 'tensorboard'].includes(trackers)) throw new Error(`--tracking ${trackers}: both, mlflow or tensorboard`);
  const base = loadRunConfig(path.join(REPO_ROOT, 'configs', 'default.yaml'));
  const sftSteps = Number(arg('sft-steps', tiny ? '4' : '100'));
  const rlSteps = Number(arg('rl-steps', tiny ? '3' : '6'));
  const shape = tiny ? { model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, task: { ...base.task, trainProblems: 40, evalProblems: 4, rl: { ...base.task.rl, evalProblems: 4 } } } : {};
  // The RL phase is measured: no evaluations along the way, no baselines, no test split.
  const common: RunConfigInput = {
    ...base,
    experiment: 'bench-tracking',
    ...shape,
    task: { ...(shape.task ?? base.task), rl: { ...(shape.task ?? base.task).rl, evalProblems: tiny ? 4 : 16, testProblems: 0 } },
    eval: { ...base.eval, everySteps: 0, rlEverySteps: 0, sampled: false },
    compare: { moreSft: false, filteredSft: false, rft: false },
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-tracking-'));
  const [stack, mlflow] = await Promise.all([
    startLocalStack({ label: 'bench-tracking', queues: ['orchestration', 'inference', 'training', 'tools'] }),
    startMlflowOnFreePort({ dir: path.join(dir, 'mlflow'), logFile: path.join(dir, 'mlflow.log') }),
  ]);
  const tracking = {
    ...(trackers !== 'tensorboard' ? { mlflow: { uri: mlflow.uri, experiment: 'bench-tracking' } } : {}),
    ...(trackers !== 'mlflow' ? { tensorboard: { dir: path.join(dir, 'tensorboard') } } : {}),
  };
  const stamp = Date.now();
  const run = async (id: string, cfg: RunConfigInput): Promise<void> => {
    await (await stack.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [cfg] })).result();
  };
  /** CPU seconds so far: all of it, and the trackers' processes. */
  const cpuNow = () => {
    const trackerCpu = trackerCpuSeconds(mlflow.pid);
    return { all: ownCpuSeconds() + processCpuSeconds(stack.serverPid) + trackerCpu.mlflow + trackerCpu.tensorboard, ...trackerCpu };
  };
  /** Runs `cfg`, reading the CPU used when its progress reaches RL step 1 and step `rlSteps` (polled every 200 ms). */
  const measuredRun = async (id: string, cfg: RunConfigInput) => {
    const handle = await stack.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [cfg] });
    let first: ReturnType<typeof cpuNow> | undefined;
    let last: ReturnType<typeof cpuNow> | undefined;
    let done = false;
    const poll = (async () => {
      while (!done && !last) {
        const step = (await handle.query(progressQuery).catch(() => undefined))?.rlStep ?? 0;
        if (!first && step >= 1) first = cpuNow();
        if (step >= rlSteps) last = cpuNow();
        await sleep(200);
      }
    })();
    await handle.result();
    done = true;
    await poll;
    if (!first || !last) throw new Error(`${id}: the progress query never showed RL step ${first ? rlSteps : 1}`);
    return { first, last };
  };
  try {
    const sftId = `bench-tracking-sft-${stamp}`;
    await run(sftId, { ...common, sft: { ...common.sft, steps: sftSteps }, rl: { ...common.rl, steps: 0 } });
    const rlConfig: RunConfigInput = { ...common, init: { fromRun: sftId }, sft: { ...common.sft, steps: 0 }, rl: { ...common.rl, steps: rlSteps } };
    console.log(`${sftSteps} SFT steps, then ${rlSteps} RL steps of ${common.rl?.promptsPerStep} prompts × ${common.rl?.groupSize} from that checkpoint per run; ${pairs} pairs of runs, tracking off and on (${trackers === 'both' ? 'MLflow and TensorBoard' : trackers}), alternating; steps 2–${rlSteps} measured`);
    console.log('');
    console.log('| pair | run | tracking | median s/step | steps (s) | CPU s/step, all | of which MLflow server | TensorBoard writer |');
    console.log('|---:|---:|---|---:|---|---:|---:|---:|');
    const outcomes: RunOutcome[][] = [];
    let n = 0;
    for (let p = 0; p < pairs; p++) {
      const order = p % 2 === 0 ? [false, true] : [true, false];
      const pair: RunOutcome[] = [];
      for (const tracked of order) {
        const id = `bench-tracking-${tracked ? 'on' : 'off'}-${p}-${stamp}`;
        const { first, last } = await measuredRun(id, tracked ? { ...rlConfig, tracking } : rlConfig);
        const times = await rlLineTimes(stack.client, id);
        if (times.length !== rlSteps) throw new Error(`${id}: ${times.length} RL metrics lines, expected ${rlSteps}`);
        const steps = times.slice(1).map((t, i) => (t - times[i]!) / 1000);
        const per = (k: 'all' | 'mlflow' | 'tensorboard') => (last[k] - first[k]) / (rlSteps - 1);
        const o: RunOutcome = { tracked, step: median(steps), steps, cpuPerStep: per('all'), trackerCpuPerStep: { mlflow: per('mlflow'), tensorboard: per('tensorboard') } };
        pair.push(o);
        n++;
        console.log(`| ${p + 1} | ${n} | ${tracked ? 'on' : 'off'} | ${o.step.toFixed(3)} | ${steps.map((s) => s.toFixed(2)).join(', ')} | ${o.cpuPerStep.toFixed(3)} | ${o.trackerCpuPerStep.mlflow.toFixed(3)} | ${o.trackerCpuPerStep.tensorboard.toFixed(3)} |`);
      }
      outcomes.push(pair);
    }
    const of = (tracked: boolean) => outcomes.flat().filter((o) => o.tracked === tracked);
    const off = median(of(false).map((o) => o.step));
    const on = median(of(true).map((o) => o.step));
    const ratios = outcomes.map((pair) => pair.find((o) => o.tracked)!.step / pair.find((o) => !o.tracked)!.step);
    const allSteps = (tracked: boolean) => median(of(tracked).flatMap((o) => o.steps));
    console.log('');
    console.log(`median s/step over runs: off ${off.toFixed(3)}, on ${on.toFixed(3)}: on/off ${(on / off).toFixed(4)} (${((on / off - 1) * 100).toFixed(2)}%)`);
    console.log(`median over every measured step: off ${allSteps(false).toFixed(3)}, on ${allSteps(true).toFixed(3)}: on/off ${(allSteps(true) / allSteps(false)).toFixed(4)}`);
    console.log(`per pair on/off: ${ratios.map((r) => r.toFixed(4)).join(', ')} (median ${median(ratios).toFixed(4)}, ${Math.min(...ratios).toFixed(4)}–${Math.max(...ratios).toFixed(4)})`);
    const cpu = (k: 'mlflow' | 'tensorboard') => median(of(true).map((o) => o.trackerCpuPerStep[k]));
    const cpuOff = median(of(false).map((o) => o.cpuPerStep));
    const cpuOn = median(of(true).map((o) => o.cpuPerStep));
    const cpuRatios = outcomes.map((pair) => pair.find((o) => o.tracked)!.cpuPerStep / pair.find((o) => !o.tracked)!.cpuPerStep);
    console.log(`CPU s/step (median over runs): off ${cpuOff.toFixed(3)}, on ${cpuOn.toFixed(3)}: on/off ${(cpuOn / cpuOff).toFixed(4)}; per pair ${cpuRatios.map((r) => r.toFixed(4)).join(', ')}`);
    console.log(`trackers' own processes, CPU per RL step (median of the on runs): MLflow server ${cpu('mlflow').toFixed(3)} s, TensorBoard writer ${cpu('tensorboard').toFixed(3)} s (${((100 * (cpu('mlflow') + cpu('tensorboard'))) / cpuOff).toFixed(2)}% of an untracked step's CPU)`);
  } finally {
    await stack.stop();
    await mlflow.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
