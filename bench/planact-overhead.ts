/**
 * What Temporal costs a Plan/Act rollout, and how long the dual-mode barrier takes to get going.
 *   npm run build && node dist/bench/planact-overhead.js [--latency 5000] [--jitter 0.5] [--episodes 64,256,1024]
 *     [--repeat 2] [--group 4] [--per-workflow <episodes per child workflow; default: the group>]
 *     [--batch-requests true,false,local,local/256: the Temporal path once per rollout.batchRequests value
 *      (after a slash, rollout.episodesPerWorkflow for that row), default true]
 *     [--barrier-rollouts 0] [--quick: 2 episodes at 20 ms, once, and 2 barrier rollouts (the suite's smoke test)]
 *     [--cpu-prof <dir>: a V8 CPU profile of the orchestration and tools worker processes, written there at the end]
 *   Every episode must earn reward 1 (the oracle's); when one does not, the run stops, printing the
 *   missed episodes' turns, and with DURABLE_RL_BENCH_DUMP=<dir> writes their child workflows' histories there.
 *
 * Overhead: the same rollout (N episodes of 4-term problems, N / group GRPO groups; each episode has
 * 3 planner turns, 2 + 1 concurrent acts, 9 generations and 3 calculator calls) run two ways with
 * the same activity functions:
 *   temporal  planActRollout -> one planActEpisodes child per group -> activities on their queues
 *   direct    runPlanActEpisode in this process, deps calling those activity functions directly
 * generate is the oracle stand-in sleeping a latency per call, so the difference is orchestration,
 * not our CPU model. Both write token blobs and sample sets to the blob store.
 *
 * The default latency stands in for a GPU engine serving an LLM agent: vLLM or SGLang decoding a
 * 7-8B model for 64 sequences at once gives each ~40 tokens/s, so agent turns of 100-300 tokens take
 * 2.5-7.5 s: --latency 5000 --jitter 0.5. The jitter spreads each request over latency*(1 +- j),
 * decided by a hash of the request and its sampling seed, so a given request waits the same on both
 * paths, and the episodes of a GRPO group (the same prompt, other samples) wait differently, as
 * replies of different lengths from a continuously batching engine would. --jitter 0 makes every episode
 * reach Temporal at the same instant, the worst case for a shared CPU; --latency 1000 stands for
 * short replies like the embedded arithmetic policy's (at most 48 tokens).
 * For the largest size, the hop breakdown read back from the histories shows where the added time
 * went (bench/lib/history-hops.ts).
 *
 * Barrier latency: a planner job and an actor job (dual mode) go through --barrier-rollouts
 * consecutive rollouts of one episode; per rollout, from the second job's arrival at the session
 * (its update handled) to the first planner generate starting on the inference worker.
 *
 * Everything (dev server, workers, client) shares this machine's cores, as in the embedded default.
 * The orchestration and tools workers run in processes of their own (as workers/<queue>.ts deploy
 * them), so the CPU per episode splits by process: the server, the orchestration worker, the tools
 * worker, and this process (the oracle inference worker and the client; the direct path runs here
 * alone). Each size also reports the history events, activities and workflow tasks per episode and
 * the startup (rollout start -> the last child's first call under way), read back from the histories,
 * and the orchestration worker's CPU by thread (main, the workflow thread, the rest) from /proc.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import type { GenerateBatchInput, GenerateInput } from '../activities/inference';
import { settleBatch } from '../activities/batch';
import { createOracleInferenceActivities, ORACLE_TASK_QUEUE } from '../activities/oracle-inference';
import { createSampleActivities } from '../activities/samples';
import { createToolActivities } from '../activities/tools';
import { startLocalStack } from '../scripts/lib/local-stack';
import { formatHops, rolloutHops, type RolloutHops } from './lib/history-hops';
import { parseRunConfig } from '../src/config/parse';
import { REPO_ROOT } from '../src/paths';
import type { RunConfig, RunConfigInput } from '../src/config/schema';
import type { AgentRole } from '../src/domain/types';
import { runPlanActEpisode } from '../src/planact/episode';
import { episodeSeed, generationSeed } from '../src/planact/sampling-seed';
import { problemFromExpression } from '../src/tasks/arith/problem';
import { arithTask } from '../src/tasks/arith/task';
import { episodeLimits, rolloutProblems } from '../workflows/rollout-episodes';
import type { PlanActJobResult } from '../src/contracts/plan-act-job';
import type { PlanActGroupResult } from '../src/contracts/plan-act-episode';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import type { SampleSetRef } from '../src/contracts/sample-set';
import type { PolicyRef } from '../src/contracts/weights';
import { sessionStateQuery, sessionWorkflowId } from '../workflows/messages';
import { TASK_QUEUES } from '../workflows/task-queues';
import { arg, flag } from './lib/args';
import { ownCpuSeconds, processCpuSeconds, threadCpuSeconds, threadSplit, type ThreadSplit } from './lib/cpu';
import { requestLatency } from './lib/oracle-latency';

/** The suite's smoke test: everything once, tiny. */
const QUICK = flag('quick');
const LATENCY_MS = Number(arg('latency', QUICK ? '20' : '5000'));
const JITTER = Number(arg('jitter', '0.5'));
const SIZES = arg('episodes', QUICK ? '2' : '64,256,1024').split(',').map(Number);
const REPEAT = Number(arg('repeat', QUICK ? '1' : '2'));
const BARRIER_ROLLOUTS = Number(arg('barrier-rollouts', QUICK ? '2' : '0'));
/** GRPO group size; a rollout of N episodes is N / group prompts. */
const GROUP = Number(arg('group', QUICK ? '2' : '4'));
/** Episodes per child workflow (planActRollout's episodesPerWorkflow); default: one child per group. */
const PER_WORKFLOW = flag('per-workflow') ? Number(arg('per-workflow', '1')) : undefined;
/**
 * The ways the Temporal path makes its calls, one row each: rollout.batchRequests, and after a slash
 * rollout.episodesPerWorkflow (default: --per-workflow, else the GRPO group). true (the default) sends
 * an episode workflow's calls of one activation as one activity, whose episodes then wait for its
 * slowest call; false, one activity per call; local, exchanges with the orchestration worker, which
 * runs the calls itself (local/256: 256 episodes to a child workflow).
 */
type Calls = RunConfig['rollout']['batchRequests'];
interface Way {
  calls: Calls;
  perWorkflow?: number;
  name: string;
}
const WAYS = arg('batch-requests', 'true').split(',').map((w): Way => {
  const [v, per] = w.split('/');
  if (v !== 'true' && v !== 'false' && v !== 'local') throw new Error(`--batch-requests takes true, false and local (each optionally /<episodes per workflow>), got ${w}`);
  const calls: Calls = v === 'local' ? 'local' : v === 'true';
  const perWorkflow = per !== undefined ? Number(per) : PER_WORKFLOW;
  if (perWorkflow !== undefined && !(Number.isInteger(perWorkflow) && perWorkflow >= 1)) throw new Error(`episodes per workflow must be a positive integer, got ${w}`);
  const base = calls === 'local' ? 'local' : calls ? 'batched' : 'one each';
  return { calls, ...(perWorkflow !== undefined ? { perWorkflow } : {}), name: per !== undefined ? `${base}, ${perWorkflow} a workflow` : base };
});
const CPU_PROF = flag('cpu-prof') ? arg('cpu-prof', '') : undefined;
const POLICY: PolicyRef = { weights: { version: 1, step: 0, onnx: { sha256: '0'.repeat(64), bytes: 0, kind: 'onnx' } }, inferenceQueue: ORACLE_TASK_QUEUE };

/**
 * The policy each way of calling plays: the oracle's queue for activities; for local calls the
 * default queue, which 'local' serves with the orchestration worker's own calls (bench/lib/planact-worker.ts).
 */
const policyFor = (c: Calls): PolicyRef => (c === 'local' ? { weights: POLICY.weights } : POLICY);

/** The config with the way's rollout.batchRequests and rollout.episodesPerWorkflow set. */
function withWay(cfg: RunConfig, way: Way): RunConfig {
  return { ...cfg, rollout: { ...cfg.rollout, batchRequests: way.calls, ...(way.perWorkflow !== undefined ? { episodesPerWorkflow: way.perWorkflow } : {}) } };
}

function config(overrides: RunConfigInput): RunConfig {
  return parseRunConfig({
    experiment: 'bench',
    seed: 1,
    task: { difficulty: { minTerms: 4, maxTerms: 4, minDigits: 1, maxDigits: 2 } },
    rl: { groupSize: 1, maxNewTokens: 48 },
    rollout: { mode: 'shared', maxTurns: 4, maxActsPerTurn: 4 },
    ...overrides,
  });
}

/** Where the CPU goes: the dev server, the two worker processes, and this one (inference worker and client). */
const PARTS = ['server', 'orchestration', 'tools', 'self'] as const;
type Part = (typeof PARTS)[number];
type CpuSplit = Record<Part, number>;

function cpuNow(pids: Record<Exclude<Part, 'self'>, number>): CpuSplit {
  return { server: processCpuSeconds(pids.server), orchestration: processCpuSeconds(pids.orchestration), tools: processCpuSeconds(pids.tools), self: ownCpuSeconds() };
}

function cpuSince(pids: Record<Exclude<Part, 'self'>, number>, from: CpuSplit): CpuSplit {
  const now = cpuNow(pids);
  return Object.fromEntries(PARTS.map((p) => [p, now[p] - from[p]])) as CpuSplit;
}

/** CPU seconds per wall second of each process while nothing runs (pollers, the server's timers). */
async function idleCpuPerSec(pids: Record<Exclude<Part, 'self'>, number>, ms: number): Promise<CpuSplit> {
  const from = cpuNow(pids);
  await new Promise((r) => setTimeout(r, ms));
  const used = cpuSince(pids, from);
  return Object.fromEntries(PARTS.map((p) => [p, used[p] / (ms / 1000)])) as CpuSplit;
}

function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const latency = { ms: LATENCY_MS };
  /** Earliest planner generate per calling workflow's session prefix (barrier latency). */
  const firstPlanner = new Map<string, number>();
  const stack = await startLocalStack({
    label: 'bench-planact',
    queues: ['orchestration', 'tools'],
    // Each in a process of its own, as a deployment runs them: their CPU is counted apart.
    workerProcesses: {
      entry: path.join(REPO_ROOT, 'dist', 'bench', 'lib', 'planact-worker.js'),
      env: { DURABLE_RL_BENCH_LATENCY_MS: String(LATENCY_MS), DURABLE_RL_BENCH_JITTER: String(JITTER) },
      // --cpu-prof DIR: a V8 CPU profile of each worker process, written when it stops (docs/benchmarks.md's profile).
      ...(CPU_PROF ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${path.resolve(CPU_PROF)}`] } : {}),
    },
    extraWorkers: async (connection, store) => {
      const oracle = createOracleInferenceActivities({ store });
      const generate = async (input: GenerateInput) => {
        const started = Date.now();
        if (input.role === 'planner') {
          const caller = Context.current().info.workflowExecution?.workflowId ?? '';
          const session = caller.split('/')[0] ?? caller;
          if (!firstPlanner.has(session)) firstPlanner.set(session, started);
        }
        await new Promise((r) => setTimeout(r, requestLatency(latency.ms, JITTER, input.role, input.prompt, input.params.seed)));
        return oracle.generate(input);
      };
      return [
        await Worker.create({
          connection,
          taskQueue: ORACLE_TASK_QUEUE,
          activities: {
            generate,
            // Each call of a batch waits its own latency; the batch answers when the slowest has.
            generateBatch: ({ requests }: GenerateBatchInput) => settleBatch(requests, generate),
          },
          maxConcurrentActivityTaskExecutions: 2048,
        }),
      ];
    },
  });
  const { client, store } = stack;
  const oracle = createOracleInferenceActivities({ store });

  // The same functions the workers run, called in this process.
  const tools = createToolActivities();
  const samples = createSampleActivities({ store });
  const direct = async (cfg: RunConfig, rolloutId: number): Promise<number> => {
    const problems = rolloutProblems(cfg, rolloutId);
    const episodes = await Promise.all(
      problems.map(async (p) => {
        const episodeId = `direct/r${rolloutId}/e${p.index}`;
        // The sampling seed the rollout workflow gives this episode, so each request waits as long on both paths.
        const seed = episodeSeed(cfg.seed, rolloutId, p.index);
        const r = await runPlanActEpisode(
          problemFromExpression(p.expression),
          {
            generate: async (role, prompt, meta) => {
              await new Promise((res) => setTimeout(res, requestLatency(latency.ms, JITTER, role, prompt, generationSeed(seed, role, meta))));
              return oracle.generate({ weights: POLICY.weights, role, prompt, params: { maxNewTokens: meta.maxNewTokens, temperature: 1, topP: 1, stop: meta.stop } });
            },
            calc: (expression) => tools.calc({ expression }),
          },
          { task: arithTask, episodeId, ...episodeLimits(cfg) },
        );
        const sets = await samples.writeEpisodeSamples({
          episodes: [{ episodeId, groupId: p.groupId, reward: r.reward, generations: r.generations.map((g) => ({ role: g.role, turn: g.turn, ...(g.actId ? { actId: g.actId } : {}), tokens: g.output.tokens, weightVersion: g.output.weightVersion })) }],
        });
        return { reward: r.reward, sets };
      }),
    );
    for (const role of ['planner', 'actor'] as AgentRole[]) {
      await samples.concatSampleSets({ sets: episodes.map((e) => e.sets[role]).filter((s): s is SampleSetRef => s !== undefined) });
    }
    return episodes.reduce((a, e) => a + e.reward, 0) / episodes.length;
  };
  let lastRolloutId = '';
  const viaTemporal = async (cfg: RunConfig, rolloutId: number, label: string, policy: PolicyRef = POLICY): Promise<number> => {
    lastRolloutId = `bench-${label}-${Date.now()}`;
    const summary = (await client.workflow.execute('planActRollout', {
      taskQueue: TASK_QUEUES.orchestration,
      workflowId: lastRolloutId,
      args: [{ runId: 'bench', rolloutId, mode: 'shared', config: cfg, policies: { planner: policy, actor: policy } }],
    })) as RolloutSummary;
    if (summary.meanReward !== 1) {
      // Say which episodes missed and why before the run stops on it.
      const missed = summary.rows.filter((r) => r.reward !== 1);
      console.error(`${label}: ${missed.length} of ${summary.episodes} episodes missed (failures ${JSON.stringify(summary.failures)}); first: ${JSON.stringify(missed.slice(0, 3))}`);
      // Their turns, from the child workflows' results.
      const ids = new Set(missed.slice(0, 3).map((r) => r.episodeId));
      const history = await client.workflow.getHandle(lastRolloutId).fetchHistory();
      for (const e of history.events ?? []) {
        const child = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
        if (!child) continue;
        const group = (await client.workflow.getHandle(child).result()) as PlanActGroupResult;
        for (const ep of group.episodes) {
          if (!ids.has(ep.episodeId)) continue;
          console.error(`${child}: ${JSON.stringify(ep)}`);
          if (process.env.DURABLE_RL_BENCH_DUMP) fs.writeFileSync(`${process.env.DURABLE_RL_BENCH_DUMP}/${child.replace(/\//g, '_')}.json`, JSON.stringify(await client.workflow.getHandle(child).fetchHistory()));
        }
      }
    }
    return summary.meanReward;
  };
  const timed = async (fn: () => Promise<number>): Promise<{ ms: number; reward: number }> => {
    const t0 = performance.now();
    const reward = await fn();
    return { ms: performance.now() - t0, reward };
  };

  async function barrierLatencies(): Promise<number[]> {
    latency.ms = 20;
    const experiment = `bench-barrier-${Date.now()}`;
    const dual = config({ experiment, rl: { promptsPerStep: 1, groupSize: 1 }, rollout: { mode: 'dual', maxTurns: 4, barrierTimeoutSec: 120, rolloutTimeoutSec: 300 } });
    const rolloutIds = Array.from({ length: BARRIER_ROLLOUTS }, (_, i) => i + 1);
    const jobs = await Promise.all(
      (['planner', 'actor'] as const).map((role) =>
        client.workflow.start('planActJob', {
          taskQueue: TASK_QUEUES.orchestration,
          workflowId: `${experiment}-${role}`,
          args: [{ role, config: dual, rolloutIds, weights: POLICY.weights, train: false, inferenceQueue: ORACLE_TASK_QUEUE }],
        }),
      ),
    );
    const results = (await Promise.all(jobs.map((j) => j.result()))) as PlanActJobResult[];
    if (results.some((r) => r.rollouts.some((x) => x.outcome !== 'joint'))) throw new Error('a barrier rollout did not complete jointly');
    const waits: number[] = [];
    for (const id of rolloutIds) {
      const sessionId = sessionWorkflowId(experiment, id);
      const state = await client.workflow.getHandle(sessionId).query(sessionStateQuery);
      const second = Math.max(state.arrivals.planner!.arrivedAt, state.arrivals.actor!.arrivedAt);
      waits.push(firstPlanner.get(sessionId)! - second);
    }
    return waits;
  }

  try {
    // Warm up: workflow bundle loaded, code paths compiled, server caches filled.
    await viaTemporal(config({ rl: { promptsPerStep: 2, groupSize: 1 } }), 999, 'warmup');
    await direct(config({ rl: { promptsPerStep: 2, groupSize: 1 } }), 999);
    const pids = { server: stack.serverPid, orchestration: stack.workerPids.orchestration!, tools: stack.workerPids.tools! };
    // What the idle server and pollers burn per second, taken out of the CPU per episode below.
    const idle = await idleCpuPerSec(pids, 5000);

    const rows: string[] = [];
    const shapes: string[] = [];
    const threadRows: string[] = [];
    let hops: RolloutHops | undefined;
    for (const n of SIZES) {
      const group = Math.min(GROUP, n);
      const cfg = config({ rl: { promptsPerStep: Math.ceil(n / group), groupSize: group, maxNewTokens: 48 } });
      const d: number[] = [];
      const t = new Map<Way, number[]>(WAYS.map((w) => [w, []]));
      const cpu = new Map<Way, CpuSplit>(WAYS.map((w) => [w, { server: 0, orchestration: 0, tools: 0, self: 0 }]));
      const shape = new Map<Way, RolloutHops>();
      // The orchestration worker's CPU by thread: what the workflow thread (its busiest but the main one) takes.
      const threads = new Map<Way, ThreadSplit>(WAYS.map((w) => [w, { main: 0, busiest: 0, rest: 0 }]));
      let directCpu = 0;
      for (let rep = 0; rep < REPEAT; rep++) {
        // Interleaved, so drift in machine load hits every path alike.
        for (const batch of WAYS) {
          const from = cpuNow(pids);
          const threadsFrom = threadCpuSeconds(pids.orchestration);
          const a = await timed(() => viaTemporal(withWay(cfg, batch), rep + 1, `n${n}-r${rep}-${batch.name.replace(/[ ,]+/g, '-')}`, policyFor(batch.calls)));
          const used = cpuSince(pids, from);
          const split = threadSplit(pids.orchestration, threadsFrom, threadCpuSeconds(pids.orchestration));
          const th = threads.get(batch)!;
          th.main += split.main;
          th.busiest += split.busiest;
          th.rest += split.rest;
          const c = cpu.get(batch)!;
          for (const part of PARTS) c[part] += used[part] - (idle[part] * a.ms) / 1000;
          if (a.reward !== 1) throw new Error(`expected reward 1 everywhere, got ${a.reward} through Temporal`);
          t.get(batch)!.push(a.ms);
          // Read back after the CPU is counted; the histories are the same in every repeat.
          if (rep === 0) shape.set(batch, await rolloutHops(client, lastRolloutId));
        }
        const direct0 = ownCpuSeconds();
        const b = await timed(() => direct(cfg, rep + 1));
        directCpu += ownCpuSeconds() - direct0 - (idle.self * b.ms) / 1000;
        if (b.reward !== 1) throw new Error(`expected reward 1 everywhere, got direct ${b.reward}`);
        d.push(b.ms);
      }
      if (n === Math.max(...SIZES)) hops = shape.get(WAYS[0]!);
      const perEpisodeMs = (sec: number): string => Math.max(0, (sec / REPEAT / n) * 1000).toFixed(0);
      const perEpisode = (count: number): string => (count / n).toFixed(1);
      for (const batch of WAYS) {
        const tb = t.get(batch)!;
        const c = cpu.get(batch)!;
        const h = shape.get(batch)!;
        // Repeats solve different problems (with --jitter, different latencies), so compare within a
        // repeat and keep the least disturbed one.
        const best = tb.map((_, i) => i).reduce((a, i) => (tb[i]! / d[i]! < tb[a]! / d[a]! ? i : a), 0);
        const tm = tb[best]!;
        const dm = d[best]!;
        const total = PARTS.reduce((sum, part) => sum + c[part], 0);
        const calls = batch.name;
        rows.push(
          `| ${n} | ${calls} | ${(dm / 1000).toFixed(2)} | ${(tm / 1000).toFixed(2)} | ${(tm - dm).toFixed(0)} | ${(((tm - dm) / dm) * 100).toFixed(1)}% | ` +
            `${perEpisodeMs(directCpu)} | ${perEpisodeMs(total)} | ${PARTS.map((part) => perEpisodeMs(c[part])).join(' | ')} |`,
        );
        const th = threads.get(batch)!;
        threadRows.push(`| ${n} | ${calls} | ${perEpisodeMs(th.main)} | ${perEpisodeMs(th.busiest)} | ${perEpisodeMs(th.rest)} |`);
        shapes.push(`| ${n} | ${calls} | ${h.workflows} | ${perEpisode(h.events)} | ${perEpisode(h.activities)} | ${perEpisode(h.workflowTasks)} | ${h.startupMs.toFixed(0)} |`);
        console.error(
          `n=${n} ${calls}: temporal ${tb.map((x) => x.toFixed(0)).join(', ')} ms; direct ${d.map((x) => x.toFixed(0)).join(', ')} ms; ` +
            `CPU per episode: direct ${perEpisodeMs(directCpu)} ms; through Temporal: ${PARTS.map((part) => `${part} ${perEpisodeMs(c[part])} ms`).join(', ')}`,
        );
      }
    }

    const waits = BARRIER_ROLLOUTS > 0 ? await barrierLatencies() : [];

    const latencyText = JITTER > 0 ? `${LATENCY_MS} ms ± ${(JITTER * 100).toFixed(0)}%` : `${LATENCY_MS} ms`;
    console.log(`Plan/Act orchestration overhead (generate latency ${latencyText} per call, 9 generations + 3 calculator calls per episode, best of ${REPEAT} paired runs; ${os.cpus().length} cores shared by server, workers and client)\n`);
    console.log(
      `CPU per episode: each process over the run, less what it burns idle (ms/s: ${PARTS.map((part) => `${part} ${(idle[part] * 1000).toFixed(0)}`).join(', ')}); ` +
        'self is this process: the oracle inference worker and the client (the direct path runs here alone)\n',
    );
    console.log('| concurrent episodes | calls through Temporal (rollout.batchRequests) | direct (s) | through Temporal (s) | added (ms) | overhead | CPU/episode direct (ms) | CPU/episode Temporal (ms) | server | orchestration worker | tools worker | inference worker + client |');
    console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of rows) console.log(r);
    console.log('\nPer episode through Temporal (first repeat; rollout and child histories)\n');
    console.log('| concurrent episodes | calls | workflows | history events | activities | workflow tasks | startup (ms) |');
    console.log('|---:|---|---:|---:|---:|---:|---:|');
    for (const r of shapes) console.log(r);
    console.log('\nThe orchestration worker by thread, CPU per episode (ms; idle not taken out): its main thread (activities, local calls, the SDK\'s bridge), its busiest other thread (the workflow thread), the rest (V8\'s garbage collector and compiler threads, libuv\'s pool, the SDK\'s Core)\n');
    console.log('| concurrent episodes | calls | main thread | workflow thread | other threads |');
    console.log('|---:|---|---:|---:|---:|');
    for (const r of threadRows) console.log(r);
    if (hops) console.log(`\nInside Temporal, last rollout of ${Math.max(...SIZES)} episodes: ${formatHops(hops)}`);
    if (waits.length > 0) {
      console.log(`\nBarrier latency, second arrival -> first planner generate (${BARRIER_ROLLOUTS} consecutive dual-mode rollouts)\n`);
      console.log('| p50 (ms) | p99 (ms) | min (ms) | max (ms) |');
      console.log('|---:|---:|---:|---:|');
      console.log(`| ${percentile(waits, 50)} | ${percentile(waits, 99)} | ${Math.min(...waits)} | ${Math.max(...waits)} |`);
    }
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
