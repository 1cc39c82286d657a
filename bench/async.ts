/**
 * Synchronous against asynchronous RL (rl.async.maxStaleness), side by side in one run: per seed, one
 * SFT run, then the main job's RL phase from its checkpoint once per schedule (same config, same
 * seed; the order of the schedules rotates with the seed so drift in the machine's load falls on
 * each alike). Reports RL steps per hour and held-out greedy accuracy at the end (equal trained
 * samples: every schedule trains the same steps of the same batch size), per seed and as mean ±
 * spread, and the async/sync speed ratio per seed.
 *
 * --simulate-gpu-ms L adds L ms to every generate activity (an episode workflow's batch of requests
 * waits once, as a GPU engine serves a batch's rows together), the time a GPU engine on other
 * devices would take: the rollout then waits instead of computing, as in a deployment where
 * inference and training do not share a CPU (bench:planact's stand-in for an LLM engine, the same idea).
 *
 * --engine vllm plays the RL rollouts on a real vLLM server (the CPU build setup installs, started
 * here on a free port), the weights synced into it every step (configs/vllm.yaml's setting): an
 * asynchronous schedule then runs partial rollouts, and the table counts the samples that span
 * more than one weight version. SFT and the evaluations stay on the embedded engine. Its latency
 * is real, so --simulate-gpu-ms is refused with it.
 *
 * --layout trainer-apart (the default) is the main job's layout for asynchronous RL: every queue in
 * the bench's process but the training queue, which has a process of its own; with --nice N (10 by
 * default, 0: none) the bench's process and the dev server (and vLLM) run at nice +N, so the update,
 * which every later step waits for, keeps its core. --layout processes runs each task queue's
 * workers in a process of its own, as a deployment does, every one but the trainer's, the dev server
 * and vLLM at nice +N. --layout one-process hosts them all in the bench's process, where tfjs's
 * synchronous training holds the event loop the rollouts need (docs/async-rl.md, "Where the time goes").
 *
 * Besides the tables, it prints where the CPU went over each run's RL phase (core-seconds per RL step
 * of the dev server, the bench's process, each worker process and the whole machine) and on stderr
 * the activities this process's workers ran per RL step.
 *
 *   npm run build && npm run bench:async [-- --seeds 1,2,3 --modes 0,1,2 --sft-steps 300 --rl-steps 16 --simulate-gpu-ms 0 --engine embedded --layout trainer-apart|processes|one-process --nice 10]
 *   --tiny: a seconds-long smoke run (tiny model, two RL steps).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadRunConfig } from '../src/config/load';
import type { RunConfig, RunConfigInput } from '../src/config/schema';
import type { TrainingRunResult } from '../src/contracts/training-run';
import { defaultRunsDir, REPO_ROOT } from '../src/paths';
import { startLocalStack } from '../scripts/lib/local-stack';
import { freePort } from '../scripts/lib/dev-server';
import { startVllmForModel } from '../scripts/lib/remote-engine-for-run';
import type { RunningVllm } from '../scripts/lib/vllm-server';
import { progressQuery } from '../workflows/messages';
import { TASK_QUEUES, type TaskQueueName } from '../workflows/task-queues';
import { arg } from './lib/args';
import { machineBusySeconds, ownCpuSeconds, processCpuSeconds } from './lib/cpu';
import { rlStepsOfRun, stepWallSeconds } from './lib/rl-steps';

interface Outcome {
  seed: number;
  k: number;
  rlSeconds: number;
  steps: number;
  stepsPerHour: number;
  accuracy: number;
  stderr: number;
  trainerIdle: number;
  inferenceIdle: number;
  /** Asynchronous runs: trained samples whose calls ran on more than one weight version (partial rollouts on vLLM). */
  partial?: number;
  /** Core-seconds per RL step over the RL phase, by process (the dev server, this one, each worker process), and the machine's. */
  cpuPerStep: Record<string, number>;
}

/** The activities that generate tokens: one request each, or an episode workflow's batch of them. */
const GENERATE_ACTIVITIES = new Set(['generate', 'generateBatch']);

/**
 * Activities this process's workers ran, by type, and the requests in them (a batch activity's
 * requests or expressions, 1 for any other): what the rollouts cost Temporal per step.
 */
const activityCounts = new Map<string, { activities: number; requests: number }>();
const counting: ActivityInboundCallsInterceptor = {
  async execute(input, next) {
    const type = Context.current().info.activityType;
    const arg = input.args[0] as { requests?: unknown[]; expressions?: unknown[] } | undefined;
    const c = activityCounts.get(type) ?? { activities: 0, requests: 0 };
    c.activities += 1;
    c.requests += arg?.requests?.length ?? arg?.expressions?.length ?? 1;
    activityCounts.set(type, c);
    return next(input);
  },
};

/** CPU seconds used so far by each process the bench runs, and by the whole machine. */
type CpuSnapshot = Record<string, number>;

/** What a run's RL phase cost: each process's CPU seconds, and the activities this process ran by type. */
interface RlPhaseCost {
  used?: CpuSnapshot;
  activities?: Record<string, { activities: number; requests: number }>;
}

function cpuSnapshot(serverPid: number, workerPids: Partial<Record<TaskQueueName, number>>): CpuSnapshot {
  return {
    server: processCpuSeconds(serverPid),
    bench: ownCpuSeconds(),
    ...Object.fromEntries(Object.entries(workerPids).map(([q, pid]) => [q, processCpuSeconds(pid)])),
    machine: machineBusySeconds(),
  };
}

const list = (v: string): number[] => v.split(',').map((x) => Number(x.trim()));
const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const spread = (xs: number[]) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - meanOf(xs)) ** 2, 0) / (xs.length - 1)));

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const tiny = process.argv.includes('--tiny');
  const seeds = list(arg('seeds', tiny ? '1' : '1,2,3'));
  const modes = list(arg('modes', '0,1,2'));
  const gpuMs = Number(arg('simulate-gpu-ms', '0'));
  const engine = arg('engine', 'embedded');
  if (engine !== 'embedded' && engine !== 'vllm') throw new Error(`--engine ${engine}: embedded or vllm`);
  const layout = arg('layout', 'trainer-apart');
  if (layout !== 'processes' && layout !== 'one-process' && layout !== 'trainer-apart') throw new Error(`--layout ${layout}: processes, trainer-apart or one-process`);
  const nice = Number(arg('nice', layout === 'one-process' ? '0' : '10'));
  if (!Number.isInteger(nice) || nice < 0 || nice > 19) throw new Error(`--nice ${arg('nice', '')}: a whole number from 0 to 19`);
  if (nice > 0 && layout === 'one-process') throw new Error('--nice needs a trainer in a process of its own (--layout trainer-apart or processes): in one process there is nothing to favour');
  // The RL phase and its validation evaluations are measured; no test evaluation of the result.
  const main = loadRunConfig(path.join(REPO_ROOT, 'configs', 'default.yaml'));
  const base = { ...main, task: { ...main.task, rl: { ...main.task.rl, testProblems: 0 } } };
  const sftSteps = Number(arg('sft-steps', tiny ? '4' : String(base.sft.steps)));
  const rlSteps = Number(arg('rl-steps', tiny ? '2' : String(base.rl.steps)));
  const shape = tiny ? { model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, task: { ...base.task, trainProblems: 40, evalProblems: 4, rl: { ...base.task.rl, evalProblems: 8 } } } : {};
  const common: RunConfigInput = {
    ...base,
    ...shape,
    eval: { ...base.eval, everySteps: 0, rlEverySteps: 0, sampled: false },
    compare: { moreSft: false },
  };
  // A batch of requests (generateBatch) waits once, as a GPU engine serves a batch's rows together.
  const delay: ActivityInboundCallsInterceptor = {
    async execute(input, next) {
      if (GENERATE_ACTIVITIES.has(Context.current().info.activityType)) await new Promise((r) => setTimeout(r, gpuMs));
      return next(input);
    },
  };
  // vLLM's CPU attention needs a head size of 32 or more: the tiny model's (16) cannot be served.
  if (engine === 'vllm' && tiny) throw new Error('--engine vllm serves the default model; leave out --tiny');
  if (engine === 'vllm' && gpuMs > 0) throw new Error("--simulate-gpu-ms stands in for a GPU engine's latency; with --engine vllm the latency is vLLM's own");
  let vllm: RunningVllm | undefined;
  let inference: RunConfigInput['inference'] | undefined;
  let work: string | undefined;
  if (engine === 'vllm') {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-async-vllm-'));
    vllm = await startVllmForModel(base.model, 1, { dir: path.join(work, 'initial'), port: await freePort(), servedModelName: 'policy', logFile: path.join(work, 'vllm.log'), ...(nice > 0 ? { nice } : {}) });
    console.error(`vLLM on ${vllm.baseUrl} (log ${path.join(work, 'vllm.log')})`);
    inference = { engine: 'openai', openai: { baseUrl: `${vllm.baseUrl}/v1`, model: 'policy', weightSync: { dir: path.join(work, 'sync') } } };
  }
  try {
    await benchSchedules({ seeds, modes, tiny, gpuMs, engine, layout, nice, base, common, sftSteps, rlSteps, delay, ...(inference ? { inference } : {}) });
  } finally {
    await vllm?.stop();
    // Every step's exported weights; the server's log stays for a look after a failure.
    if (work) fs.rmSync(path.join(work, 'sync'), { recursive: true, force: true });
  }
}

interface BenchPlan {
  seeds: number[];
  modes: number[];
  tiny: boolean;
  gpuMs: number;
  engine: string;
  layout: 'processes' | 'trainer-apart' | 'one-process';
  /** Niceness of every process but the trainer's (processes layout). */
  nice: number;
  base: RunConfig;
  common: RunConfigInput;
  sftSteps: number;
  rlSteps: number;
  delay: ActivityInboundCallsInterceptor;
  inference?: RunConfigInput['inference'];
}

/** Where the workers ran, for the table's heading. */
function layoutText(layout: BenchPlan['layout'], nice: number, engine: string): string {
  if (layout === 'one-process') return 'all in one process';
  if (layout === 'trainer-apart') return `in the bench's process but the trainer, in one of its own (the main job's layout for rl.async)${nice > 0 ? `; the bench's process and the dev server${engine === 'vllm' ? ' and vLLM' : ''} at nice +${nice}` : ''}`;
  const niced = nice > 0 ? `, the other workers' processes, the dev server${engine === 'vllm' ? ' and vLLM' : ''} at nice +${nice}` : '';
  return `in one process per task queue${niced}`;
}

/** Per seed one SFT run, then RL once per schedule; prints the tables. */
async function benchSchedules({ seeds, modes, tiny, gpuMs, engine, layout, nice, base, common, sftSteps, rlSteps, delay, inference }: BenchPlan): Promise<void> {
  const workerEntry = path.join(REPO_ROOT, 'dist', 'bench', 'lib', 'delayed-worker.js');
  // The simulated latency: an interceptor on the inference worker where it runs in this process, an
  // environment variable of its own process in the per-queue layout.
  const latency = gpuMs > 0 && layout !== 'processes' ? [() => ({ inbound: delay })] : [];
  const stack = await startLocalStack({
    label: 'bench-async',
    queues: ['orchestration', 'inference', 'training', 'tools'],
    activityInterceptors: [() => ({ inbound: counting }), ...latency],
    // trainer-apart is the main job's layout for asynchronous RL (scripts/main.ts).
    ...(layout === 'trainer-apart' ? { workerProcesses: { queues: ['training'], entry: workerEntry }, ...(nice > 0 ? { serverNice: nice, selfNice: nice } : {}) } : {}),
    ...(layout === 'processes'
      ? {
          workerProcesses: { entry: workerEntry, env: { DURABLE_RL_GENERATE_DELAY_MS: String(gpuMs) }, nice: { orchestration: nice, inference: nice, tools: nice } },
          serverNice: nice,
        }
      : {}),
  });
  /**
   * Runs a trainingRun to its end. With `rlCpu`, the processes' CPU over its RL phase (from the first
   * RL step's start to the last's end, read from the progress query every 200 ms) goes there.
   */
  const run = async (id: string, config: RunConfigInput, rlCpu?: RlPhaseCost): Promise<TrainingRunResult> => {
    const handle = await stack.client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [config] });
    // A worker process that dies would leave the run waiting for its queue: fail instead.
    const died = stack.workerExited.then((why) => Promise.reject(new Error(why)));
    let start: CpuSnapshot | undefined;
    let startCounts: Map<string, { activities: number; requests: number }> | undefined;
    let polling = true;
    const poll = rlCpu
      ? (async () => {
          while (polling && !rlCpu.used) {
            const p = await handle.query(progressQuery).catch(() => undefined);
            if (p && !start && p.phase === 'rl') {
              start = cpuSnapshot(stack.serverPid, stack.workerPids);
              startCounts = new Map([...activityCounts].map(([k, v]) => [k, { ...v }]));
            }
            if (p && start && p.phase !== 'rl') {
              const end = cpuSnapshot(stack.serverPid, stack.workerPids);
              rlCpu.activities = Object.fromEntries(
                [...activityCounts].map(([k, v]) => [k, { activities: v.activities - (startCounts!.get(k)?.activities ?? 0), requests: v.requests - (startCounts!.get(k)?.requests ?? 0) }]).filter(([, v]) => (v as { activities: number }).activities > 0),
              );
              rlCpu.used = Object.fromEntries(Object.entries(end).map(([k, v]) => [k, v - (start![k] ?? NaN)]));
            }
            await new Promise((r) => setTimeout(r, 200));
          }
        })()
      : Promise.resolve();
    try {
      return (await Promise.race([handle.result(), died])) as TrainingRunResult;
    } finally {
      polling = false;
      await poll;
    }
  };
  const outcomes: Outcome[] = [];
  try {
    const stamp = Date.now();
    for (const [i, seed] of seeds.entries()) {
      const sftId = `bench-async-sft-s${seed}-${stamp}`;
      await run(sftId, { ...common, experiment: 'bench-async-sft', seed, sft: { ...base.sft, steps: sftSteps }, rl: { ...base.rl, steps: 0 } });
      // Rotate the schedules' order with the seed.
      const order = modes.map((_, j) => modes[(i + j) % modes.length]!);
      for (const k of order) {
        const rlCpu: RlPhaseCost = {};
        const id = `bench-async-k${k}-s${seed}-${stamp}`;
        const r = await run(id, {
          ...common,
          experiment: 'bench-async',
          seed,
          init: { fromRun: sftId },
          sft: { ...base.sft, steps: 0 },
          rl: { ...base.rl, steps: rlSteps, ...(k > 0 ? { async: { maxStaleness: k } } : {}) },
          ...(inference ? { inference } : {}),
        }, rlCpu);
        // Every step from the run's metrics file (the result keeps only the last steps).
        const steps = rlStepsOfRun(defaultRunsDir(), id, rlSteps);
        const rlSeconds = steps.reduce((n, p) => n + stepWallSeconds(p), 0);
        const last = r.rlEvals.at(-1)!.greedy;
        const sched = steps.filter((p) => p.schedule);
        outcomes.push({
          seed,
          k,
          rlSeconds,
          steps: steps.length,
          stepsPerHour: (steps.length / rlSeconds) * 3600,
          accuracy: last.accuracy,
          stderr: last.stderr,
          // The synchronous schedule's idle shares follow from its phases.
          trainerIdle: sched.length > 0 ? meanOf(sched.map((p) => p.schedule!.trainerIdle)) : meanOf(steps.map((p) => p.seconds!.rollout / stepWallSeconds(p))),
          inferenceIdle: sched.length > 0 ? meanOf(sched.map((p) => p.schedule!.inferenceIdle)) : meanOf(steps.map((p) => 1 - p.seconds!.rollout / stepWallSeconds(p))),
          ...(sched.length > 0 ? { partial: sched.reduce((n, p) => n + (p.schedule!.partial ?? 0), 0) } : {}),
          cpuPerStep: Object.fromEntries(Object.entries(rlCpu.used ?? {}).map(([k, v]) => [k, v / steps.length])),
        });
        const o = outcomes.at(-1)!;
        console.error(`seed ${seed} k=${k}: ${o.rlSeconds.toFixed(1)} s for ${o.steps} RL steps, held-out greedy ${(100 * o.accuracy).toFixed(1)}%`);
        console.error(`  train phase s/step: ${steps.map((p) => p.seconds!.train.toFixed(1)).join(' ')}`);
        console.error(`  update in activity s/step${r.rl.length < steps.length ? ` (the last ${r.rl.length})` : ''}: ${r.rl.map((p) => (p.update?.updateSeconds ?? 0).toFixed(1)).join(' ')}`);
        console.error(`  core-seconds per RL step: ${Object.entries(o.cpuPerStep).map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')}`);
        const perStep = (n: number) => (n / o.steps).toFixed(1);
        console.error(`  activities per RL step in this process (requests): ${Object.entries(rlCpu.activities ?? {}).map(([k, v]) => `${k} ${perStep(v.activities)}${v.requests !== v.activities ? ` (${perStep(v.requests)})` : ''}`).join(', ')}`);
      }
    }
  } finally {
    await stack.stop();
  }
  const cfgLine = `${sftSteps} SFT steps, ${rlSteps} RL steps of ${base.rl.promptsPerStep} prompts × ${base.rl.groupSize}; ${tiny ? 'tiny model' : 'the default model'}; rollouts on ${engine === 'vllm' ? 'a vLLM server, weights synced every step' : 'the embedded engine'}; workers ${layoutText(layout, nice, engine)}; simulated GPU latency per generate: ${gpuMs} ms`;
  console.log(cfgLine);
  console.log('');
  console.log('| seed | maxStaleness | RL wall (s) | RL steps/hour | speed vs sync | held-out greedy | trainer idle | inference idle | partial samples |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const o of outcomes) {
    const sync = outcomes.find((x) => x.seed === o.seed && x.k === 0);
    const ratio = sync ? (o.stepsPerHour / sync.stepsPerHour).toFixed(2) : '-';
    console.log(`| ${o.seed} | ${o.k} | ${o.rlSeconds.toFixed(1)} | ${o.stepsPerHour.toFixed(0)} | ${ratio}× | ${(100 * o.accuracy).toFixed(1)}% ± ${(100 * o.stderr).toFixed(1)} | ${(100 * o.trainerIdle).toFixed(0)}% | ${(100 * o.inferenceIdle).toFixed(0)}% | ${o.partial ?? '–'} |`);
  }
  console.log('');
  // Where the CPU went: core-seconds per RL step by process (this process hosts the queues that have none of their own).
  const procs = [...new Set(outcomes.flatMap((o) => Object.keys(o.cpuPerStep)))];
  console.log(`| seed | maxStaleness | RL step (s) | ${procs.map((p) => (p === 'bench' ? "bench's process" : p === 'machine' ? 'whole machine' : p)).join(' | ')} | (core-seconds per RL step) |`);
  console.log(`|---:|---:|---:|${procs.map(() => '---:|').join('')}---|`);
  for (const o of outcomes) console.log(`| ${o.seed} | ${o.k} | ${(o.rlSeconds / o.steps).toFixed(2)} | ${procs.map((p) => (o.cpuPerStep[p] ?? NaN).toFixed(2)).join(' | ')} | |`);
  console.log('');
  console.log('| maxStaleness | speed vs sync, mean ± sd over seeds | held-out greedy, mean ± sd over seeds | paired difference to sync (points), mean ± se |');
  console.log('|---:|---:|---:|---:|');
  for (const k of modes) {
    const mine = outcomes.filter((o) => o.k === k);
    const ratios = mine.flatMap((o) => {
      const sync = outcomes.find((x) => x.seed === o.seed && x.k === 0);
      return sync ? [o.stepsPerHour / sync.stepsPerHour] : [];
    });
    const diffs = mine.flatMap((o) => {
      const sync = outcomes.find((x) => x.seed === o.seed && x.k === 0);
      return sync ? [100 * (o.accuracy - sync.accuracy)] : [];
    });
    const acc = mine.map((o) => 100 * o.accuracy);
    console.log(
      `| ${k} | ${meanOf(ratios).toFixed(2)}× ± ${spread(ratios).toFixed(2)} | ${meanOf(acc).toFixed(1)}% ± ${spread(acc).toFixed(1)} | ${meanOf(diffs).toFixed(1)} ± ${(spread(diffs) / Math.sqrt(Math.max(1, diffs.length))).toFixed(1)} |`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
