/**
 * An asynchronous RL run under injected faults, against the same run without them: the Temporal
 * server (a dev server of its own on a SQLite file) and the workers (four production worker
 * processes, one per task queue) run here; every --fault-every seconds (and only once the run has
 * finished an RL step since the last fault, so a loaded machine cannot turn it into a livelock) one fault in turn — the
 * training worker SIGKILLed and started again, the inference worker likewise, the server SIGKILLed
 * and started again on the same file — while every activity attempt fails with probability
 * --activity-fail-rate (bench/lib/faulty-worker.ts). The inference worker is killed mid-rollout: its kill
 * waits (up to --fault-every seconds) until the server shows it holding generate attempts. Reports:
 *   effective training time  useful seconds over wall seconds: the clean run's RL wall time over the
 *                            faulty run's (both train the same number of steps from one checkpoint)
 *   lost                     samples a rollout produced that no step trained and no drop recorded
 *   duplicated               samples a step trained beyond its own rollout's (a rollout trained twice)
 *   time to resume           per fault, from the fault to the next RL step finished
 *   failover                 per worker kill, the attempts the server showed the dead worker holding
 *                            and, for each, when it was failed for its retry and when the retry
 *                            started, against its replacement's start (bench/lib/held-attempts.ts)
 *
 *   npm run build && npm run bench:chaos [-- --sft-steps 100 --rl-steps 48 --fault-every 60 --activity-fail-rate 0.02]
 *   --tiny: a seconds-long smoke run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, ServiceError } from '@temporalio/client';
import { freePort, startDevServer, type RunningServer } from '../scripts/lib/dev-server';
import { loadRunConfig } from '../src/config/load';
import type { RunConfigInput } from '../src/config/schema';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import type { TrainingRunResult } from '../src/contracts/training-run';
import { names } from '../src/store/run-names';
import type { RlStepMetrics } from '../src/report/run-metrics';
import { FsBlobStore } from '../src/store/fs-blob-store';
import { REPO_ROOT } from '../src/paths';
import { progressQuery } from '../workflows/messages';
import { TASK_QUEUES } from '../workflows/task-queues';
import { arg } from './lib/args';
import { heldAttempts, watchRetries, type RetriedAttempt } from './lib/held-attempts';
import { rlStepsOfRun, stepWallSeconds } from './lib/rl-steps';

type Queue = 'orchestration' | 'inference' | 'training' | 'tools';
const QUEUES: Queue[] = ['orchestration', 'inference', 'training', 'tools'];

const tiny = process.argv.includes('--tiny');
const sftSteps = Number(arg('sft-steps', tiny ? '4' : '100'));
const rlSteps = Number(arg('rl-steps', tiny ? '6' : '48'));
const faultEverySec = Number(arg('fault-every', tiny ? '4' : '60'));
const failRate = Number(arg('activity-fail-rate', '0.02'));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-chaos-'));
const storeDir = path.join(tmp, 'store');
const dbFile = path.join(tmp, 'temporal.db');
/** The longest a dead worker's attempt may wait after its replacement started (issue 36). */
const FAILOVER_WITHIN_SEC = 5;

async function main(): Promise<void> {
  const port = await freePort();
  // A server started right after a SIGKILL may find a port of the old one not yet free: try again.
  const startServer = async (): Promise<RunningServer> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await startDevServer({ port, dbFile, logFile: path.join(tmp, 'server.log'), detached: false });
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
  };
  let server = await startServer();
  const workers = new Map<Queue, ChildProcess>();
  /** Each worker process's identity, from its start-up line: the server names it on the attempts it took. */
  const identities = new Map<ChildProcess, string>();
  const note = (line: string) => console.error(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`);
  let stopping = false;
  const spawnWorker = (q: Queue, rate: number): void => {
    const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'bench', 'lib', 'faulty-worker.js'), q], {
      env: { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: 'default', DURABLE_RL_STORE: storeDir, DURABLE_RL_RUNS: path.join(tmp, 'runs'), DURABLE_RL_ATTEMPT_JOURNAL: path.join(tmp, 'attempts'), DURABLE_RL_FAULT_RATE: String(rate) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      if (!identities.has(child)) {
        out += b.toString();
        const identity = / identity (\S+)/.exec(out)?.[1];
        if (identity) identities.set(child, identity);
      }
      injected += (b.toString().match(/^FAULT /gm) ?? []).length;
      // A restarted worker failing the attempts its killed predecessor held (workers/attempt-journal.ts).
      failedOver += (b.toString().match(/attempt journal: failed /g) ?? []).length;
    });
    child.stderr!.resume();
    // A supervisor's job (systemd, Kubernetes): a worker that exits on its own is started again.
    child.once('exit', (code, signal) => {
      if (stopping || signal === 'SIGKILL' || workers.get(q) !== child) return;
      note(`${q} worker exited (${code ?? signal}); starting it again`);
      spawnWorker(q, rate);
    });
    workers.set(q, child);
  };
  const kill = async (q: Queue): Promise<void> => {
    const child = workers.get(q);
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
  };
  const startAll = (rate: number) => QUEUES.forEach((q) => spawnWorker(q, rate));
  const stopAll = async () => {
    stopping = true;
    for (const q of QUEUES) await kill(q);
    stopping = false;
  };
  // Stopped from outside (a test's timeout, Ctrl-C): take the server and workers along, which a
  // bare exit would leave running (the finally below does not run on a signal).
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      stopping = true;
      for (const child of workers.values()) child.kill('SIGKILL');
      try {
        process.kill(server.pid, 'SIGKILL');
      } catch {
        // Already gone (a fault had just stopped it).
      }
      process.exit(signal === 'SIGTERM' ? 143 : 130);
    });
  }
  let injected = 0;
  let failedOver = 0;
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  // The RL phase and its validation evaluations are measured; no test evaluation of the result.
  const main = loadRunConfig(path.join(REPO_ROOT, 'configs', 'default.yaml'));
  const base = { ...main, task: { ...main.task, rl: { ...main.task.rl, testProblems: 0 } } };
  const shape = tiny ? { model: { dModel: 32, nLayers: 1, nHeads: 2, dFf: 64, maxSeq: 192 }, task: { ...base.task, trainProblems: 40, evalProblems: 4, rl: { ...base.task.rl, evalProblems: 8 } } } : {};
  const common: RunConfigInput = { ...base, ...shape, seed: 1, eval: { ...base.eval, everySteps: 0, rlEverySteps: 0, sampled: false }, compare: { moreSft: false }, timeouts: { heartbeatSec: 10 } };
  const stamp = Date.now();
  const run = async (id: string, config: RunConfigInput, during?: (id: string) => Promise<void>): Promise<{ result: TrainingRunResult; wall: number }> => {
    const t0 = Date.now();
    const handle = await client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: id, args: [config] });
    const side = during?.(id);
    try {
      // The result's long poll breaks when the server is killed under it: ask again once it is back.
      for (;;) {
        try {
          return { result: (await handle.result()) as TrainingRunResult, wall: (Date.now() - t0) / 1000 };
        } catch (err) {
          if (!(err instanceof ServiceError)) throw err;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    } finally {
      finished = true;
      await side;
    }
  };
  const rlConfig = (sftId: string): RunConfigInput => ({ ...common, experiment: 'bench-chaos', init: { fromRun: sftId }, sft: { ...base.sft, steps: 0 }, rl: { ...base.rl, steps: rlSteps, async: { maxStaleness: 1 } } });

  const faults: Array<{ at: number; what: string; resumedAfter?: number; failover?: Promise<{ replacedAt: number; attempts: RetriedAttempt[] }> }> = [];
  /** The run under faults has ended: no more faults, the pollers stop. */
  let finished = false;
  /** Each fault's watcher of the next finished step; awaited before the connection closes. */
  const pollers: Array<Promise<void>> = [];
  try {
    startAll(0);
    note('SFT run');
    const sftId = `chaos-sft-${stamp}`;
    await run(sftId, { ...common, experiment: 'bench-chaos-sft', sft: { ...base.sft, steps: sftSteps }, rl: { ...base.rl, steps: 0 } });
    note('clean RL run');
    const clean = await run(`chaos-clean-${stamp}`, rlConfig(sftId));
    note(`clean run done in ${clean.wall.toFixed(1)} s; faulty RL run`);

    // The faulty run: workers whose activities fail at the set rate, and a fault every faultEverySec.
    await stopAll();
    startAll(failRate);
    finished = false;
    const injectFaults = async (id: string): Promise<void> => {
      const kinds = ['training worker', 'inference worker', 'server'] as const;
      for (let i = 0; !finished; i++) {
        const until = Date.now() + faultEverySec * 1000;
        // At least faultEverySec apart, and never before the run got past the last fault (an RL step
        // finished after it): on a loaded machine a step can outlast the interval, and faults that
        // keep landing first measure a livelock, not recovery.
        const previous = faults.at(-1);
        while (!finished && (Date.now() < until || (previous !== undefined && previous.resumedAfter === undefined))) await new Promise((r) => setTimeout(r, 200));
        if (finished) return;
        const what = kinds[i % kinds.length]!;
        const inference = identities.get(workers.get('inference')!);
        if (what === 'inference worker' && inference) {
          // Mid-rollout: the kill waits (up to --fault-every) for the worker to hold generate attempts,
          // which it may have taken from the server but not yet run, the failover's hardest case.
          const until = Date.now() + faultEverySec * 1000;
          while (!finished && Date.now() < until && (await heldAttempts(client, inference).catch(() => [])).length === 0) await new Promise((r) => setTimeout(r, 100));
        }
        const stepAtFault = (await client.workflow.getHandle(id).query(progressQuery).catch(() => undefined))?.rlStep ?? 0;
        const at = Date.now();
        let failover: (typeof faults)[number]['failover'];
        if (what === 'server') {
          process.kill(server.pid, 'SIGKILL');
          await server.stop();
          server = await startServer();
        } else {
          const q: Queue = what === 'training worker' ? 'training' : 'inference';
          const identity = identities.get(workers.get(q)!);
          await kill(q);
          // What the dead worker held, as the server shows it once the process is gone (attempts it
          // had taken but not yet run included), then its replacement, as a supervisor starts it.
          const held = identity ? await heldAttempts(client, identity).catch(() => []) : [];
          const replacedAt = Date.now();
          spawnWorker(q, failRate);
          failover = watchRetries(client, held, 120_000).then((attempts) => ({ replacedAt, attempts }));
        }
        note(`fault: ${what} (RL step ${stepAtFault} done)`);
        const fault: (typeof faults)[number] = { at, what, ...(failover ? { failover } : {}) };
        faults.push(fault);
        // Resumed: the next RL step finished after the fault.
        pollers.push((async () => {
          while (!finished) {
            const p = await client.workflow.getHandle(id).query(progressQuery).catch(() => undefined);
            if (p?.rlStep !== undefined && p.rlStep > stepAtFault) {
              fault.resumedAfter = (Date.now() - at) / 1000;
              return;
            }
            await new Promise((r) => setTimeout(r, 200));
          }
        })());
      }
    };
    const faulty = await run(`chaos-faulty-${stamp}`, rlConfig(sftId), injectFaults);
    const wholeRun = { clean: clean.wall, faulty: faulty.wall };

    const stepsOf = (id: string): RlStepMetrics[] => rlStepsOfRun(path.join(tmp, 'runs'), id, rlSteps);
    // Lost and duplicated samples, from the rollouts' own summaries against what each step trained.
    const count = async (id: string, steps: RlStepMetrics[]) => {
      let produced = 0;
      let trained = 0;
      let dropped = 0;
      let overTrained = 0;
      for (const p of steps) {
        const s = (await client.workflow.getHandle(`${id}/rollout-${p.step}`).result()) as RolloutSummary;
        const samples = [s.samples.planner, s.samples.actor, s.samples.single].reduce((n, x) => n + (x?.samples ?? 0), 0);
        const took = p.rows! + p.skipped!;
        produced += samples;
        trained += took;
        dropped += p.schedule?.droppedStale ?? 0;
        overTrained += Math.max(0, took - samples);
      }
      return { produced, trained, dropped, lost: Math.max(0, produced - trained - dropped), duplicated: overTrained };
    };
    const cleanSteps = stepsOf(`chaos-clean-${stamp}`);
    const faultySteps = stepsOf(`chaos-faulty-${stamp}`);
    const cleanCounts = await count(`chaos-clean-${stamp}`, cleanSteps);
    const faultyCounts = await count(`chaos-faulty-${stamp}`, faultySteps);
    // One checkpoint name per step, created only if absent: a second write of a step cannot add one.
    const checkpoints = (await new FsBlobStore(storeDir).listNames(names.checkpointPrefix(`chaos-faulty-${stamp}`))).length;
    const rlWall = (steps: RlStepMetrics[]) => steps.reduce((n, p) => n + stepWallSeconds(p), 0);
    const trainSec = (steps: RlStepMetrics[]) => steps.reduce((n, p) => n + p.seconds!.train, 0);

    console.log(`${sftSteps} SFT steps, then ${rlSteps} async RL steps (maxStaleness 1) of ${base.rl.promptsPerStep} prompts × ${base.rl.groupSize}; ${tiny ? 'tiny model' : 'the default model'}; a fault every ${faultEverySec} s, activities failing at rate ${failRate}`);
    console.log('');
    console.log('| run | whole run (s) | RL wall (s) | train (s) | useful train / wall | effective vs clean | samples produced | trained | dropped (recorded) | lost | duplicated | faults | injected activity failures |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const [name, steps, c] of [['clean', cleanSteps, cleanCounts], ['faulty', faultySteps, faultyCounts]] as const) {
      const w = rlWall(steps);
      console.log(
        `| ${name} | ${wholeRun[name].toFixed(1)} | ${w.toFixed(1)} | ${trainSec(steps).toFixed(1)} | ${(100 * (trainSec(steps) / w)).toFixed(0)}% | ${((100 * rlWall(cleanSteps)) / w).toFixed(0)}% | ${c.produced} | ${c.trained} | ${c.dropped} | ${c.lost} | ${c.duplicated} | ${name === 'faulty' ? faults.length : 0} | ${name === 'faulty' ? injected : 0} |`,
      );
    }
    console.log('');
    console.log(`attempts of killed workers failed by their replacements at start (not waiting out the heartbeat timeout): ${failedOver}`);
    console.log(`checkpoints of the faulty run: ${checkpoints} names for its ${faultySteps.length} RL steps and the checkpoint it started from`);
    console.log('');
    console.log('| fault | at (s into the run) | next RL step finished after (s) |');
    console.log('|---|---:|---:|');
    const first = faults[0]?.at ?? 0;
    for (const f of faults) console.log(`| ${f.what} | ${((f.at - first) / 1000).toFixed(0)} | ${f.resumedAfter?.toFixed(1) ?? 'run ended first'} |`);
    const steps = cleanSteps.map(stepWallSeconds).sort((a, b) => a - b);
    console.log(`(a clean step takes ${steps[Math.floor(steps.length / 2)]!.toFixed(1)} s, median)`);
    await reportFailover(faults.filter((f) => f.failover !== undefined), first);
  } finally {
    finished = true;
    await Promise.allSettled(pollers);
    stopping = true;
    await stopAll();
    await connection.close();
    await server.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Per worker kill: the attempts the dead worker held and how soon after its replacement's start each was retried. */
async function reportFailover(kills: Array<{ at: number; what: string; failover?: Promise<{ replacedAt: number; attempts: RetriedAttempt[] }> }>, first: number): Promise<void> {
  console.log('');
  console.log(`| worker killed | at (s into the run) | attempts held at death | ended by | failed for retry, s after the replacement's start (latest) | retry started, s after (latest) |`);
  console.log('|---|---:|---:|---|---:|---:|');
  const show = (v: number) => (v === Infinity ? 'not within 120 s' : v.toFixed(1));
  const byKind = new Map<string, { kills: number; failed: number[]; started: number[]; late: string[] }>();
  for (const k of kills) {
    const { replacedAt, attempts } = await k.failover!;
    const after = (t: number | undefined) => (t === undefined ? Infinity : (t - replacedAt) / 1000);
    const failed = attempts.map((a) => after(a.failedAt));
    const started = attempts.map((a) => after(a.retryStartedAt));
    const endedBy = [...new Set(attempts.map((a) => a.endedBy ?? 'not seen'))].join(', ') || '–';
    const at = ((k.at - first) / 1000).toFixed(0);
    console.log(`| ${k.what} | ${at} | ${attempts.length} | ${endedBy} | ${attempts.length ? show(Math.max(...failed)) : '–'} | ${attempts.length ? show(Math.max(...started)) : '–'} |`);
    const kind = byKind.get(k.what) ?? { kills: 0, failed: [], started: [], late: [] };
    kind.kills++;
    kind.failed.push(...failed);
    kind.started.push(...started);
    attempts.forEach((a, i) => {
      if (!(failed[i]! <= FAILOVER_WITHIN_SEC)) kind.late.push(`${a.activityType} attempt ${a.attempt} of ${a.workflowId} (killed at ${at} s): ${show(failed[i]!)} s`);
    });
    byKind.set(k.what, kind);
  }
  for (const [what, k] of byKind) {
    const held = `${what} killed ${k.kills}×, holding ${k.failed.length ? `${k.failed.length} attempts at death` : 'no attempt at death'}`;
    const latest = ` (latest ${show(Math.max(...k.failed))} s; retries started by ${show(Math.max(...k.started))} s, after the 1 s retry backoff)`;
    if (k.failed.length === 0) console.log(held);
    else if (k.late.length === 0) console.log(`${held}: every one retried (its attempt failed, the next scheduled) within ${FAILOVER_WITHIN_SEC} s of its replacement's start${latest}`);
    else console.log(`${held}: NOT every one retried within ${FAILOVER_WITHIN_SEC} s of its replacement's start: ${k.late.join('; ')}`);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
