/**
 * `npm run bench:scale`: what scaling out costs and gives, on this machine, in one run.
 *
 *   npm run build && npm run bench:scale -- [--config configs/default.yaml] [--prompts 8] [--repeat 3]
 *     [--weights-from-run <trainingRun id>] [--blob-sizes 1024,65536,1048576,16777216] [--blob-reps 30]
 *     [--only blobs|throughput]
 *
 * 1. Blob latency: put (new bytes), put again (a retried activity's idempotent re-put) and get, at
 *    each size, for the local folder store and the S3 store on a local versitygw, interleaved.
 * 2. Rollout throughput: a fresh in-memory dev server and a local versitygw; an orchestration and a
 *    tools worker process on the S3 store; then, alternating (1, 2, 2, 1, 1, 2, ...), one or two
 *    inference worker processes (the production entry, its default concurrency). Per measurement:
 *    start the inference processes, one small warm-up rollout (loads each engine), then the measured
 *    planActRollout of promptsPerStep x groupSize episodes with the config's sampling and limits.
 *    Measurement r uses rollout id r in both settings, so both run the same problems and seeds.
 *    Reported: episodes per minute, generations, and the CPU cores each process used meanwhile.
 *
 * The policy is a fresh one of the config's model unless --weights-from-run names a run whose
 * latest published weights are in the local store (DURABLE_RL_STORE or .data/store, the main job's).
 * Results go to stdout as tables and to .data/bench/scale-<time>.json.
 */
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { names } from '../src/store/run-names';
import { createTrainingActivities } from '../activities/training';
import { freePort, startDevServerOnFreePort } from '../scripts/lib/dev-server';
import { LOCAL_S3_CREDENTIALS, startS3Server } from '../scripts/lib/s3-server';
import { spawnWorker, type WorkerProcess } from '../scripts/lib/worker-fleet';
import { loadRunConfig } from '../src/config/load';
import { parseRunConfig } from '../src/config/parse';
import type { RunConfig } from '../src/config/schema';
import { DATA_DIR, REPO_ROOT } from '../src/paths';
import type { BlobStore } from '../src/store/blob-store';
import { FsBlobStore } from '../src/store/fs-blob-store';
import { openStore } from '../src/store/store-spec';
import type { PlanActRolloutInput } from '../src/contracts/rollout-inputs';
import type { RolloutSummary } from '../src/contracts/rollout-summary';
import type { PolicyRef } from '../src/contracts/weights';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { WeightsInfo } from '../src/contracts/weights';
import { defaultStore } from '../workers/create-workers';
import { arg, flag } from './lib/args';
import { blobLatency, formatBytes, type LatencyRow } from './lib/blob-latency';
import { processCpuSeconds } from './lib/cpu';

const CONFIG_FILE = arg('config', path.join(REPO_ROOT, 'configs', 'default.yaml'));
const REPEAT = Number(arg('repeat', '3'));
const ONLY = arg('only', 'all');
const BLOB_SIZES = arg('blob-sizes', '1024,65536,1048576,16777216').split(',').map(Number);
const BLOB_REPS = Number(arg('blob-reps', '30'));
const WEIGHTS_FROM_RUN = flag('weights-from-run') ? arg('weights-from-run', '') : undefined;
const BUCKET = 'bench-scale';

interface ThroughputRow {
  inferenceProcesses: number;
  rolloutId: number;
  episodes: number;
  generations: number;
  seconds: number;
  episodesPerMin: number;
  meanReward: number;
  /** CPU cores used during the measured rollout, by process. */
  cores: Record<string, number>;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const commit = execSync('git rev-parse --short HEAD', { cwd: REPO_ROOT }).toString().trim();
  const dirty = execSync('git status --porcelain -- src workers activities workflows bench scripts', { cwd: REPO_ROOT }).toString().trim() !== '';
  const command = `npm run bench:scale -- ${process.argv.slice(2).join(' ')}`.trim();
  // Other work on the machine shares its cores with every process measured here: say how much there was.
  const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`${command}\ncommit ${commit}${dirty ? ' (with uncommitted changes)' : ''}, ${os.cpus().length} cores, node ${process.version}, ${new Date().toISOString()}, load average ${load()}`);

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-bench-scale-'));
  const s3 = await startS3Server({ port: await freePort(), dataDir: path.join(tmp, 's3'), logFile: path.join(tmp, 'versitygw.log') });
  await s3.createBucket(BUCKET);
  const s3Store = openStore({ kind: 's3', bucket: BUCKET, prefix: 'store', endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true }, { credentials: LOCAL_S3_CREDENTIALS });
  const results: { command: string; commit: string; dirty: boolean; loadAverage: { start: string; end?: string }; blobs?: LatencyRow[]; throughput?: ThroughputRow[] } = { command, commit, dirty, loadAverage: { start: load() } };
  try {
    if (ONLY === 'all' || ONLY === 'blobs') {
      const fsStore = new FsBlobStore(path.join(tmp, 'fs-store'));
      results.blobs = await blobLatency({ local: fsStore, s3: s3Store }, BLOB_SIZES, (bytes) => (bytes >= 16 << 20 ? Math.max(5, Math.round(BLOB_REPS / 3)) : BLOB_REPS));
      printBlobs(results.blobs);
    }
    if (ONLY === 'all' || ONLY === 'throughput') {
      results.throughput = await throughput(tmp, s3, s3Store);
      printThroughput(results.throughput);
    }
  } finally {
    await s3.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  results.loadAverage.end = load();
  console.log(`\nload average at the end: ${results.loadAverage.end}`);
  const out = path.join(DATA_DIR, 'bench', `scale-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(results, null, 2));
  console.log(`\nresults: ${path.relative(REPO_ROOT, out)}`);
}

async function throughput(tmp: string, s3: Awaited<ReturnType<typeof startS3Server>>, store: BlobStore): Promise<ThroughputRow[]> {
  const base = loadRunConfig(CONFIG_FILE);
  const prompts = Number(arg('prompts', String(base.rl.promptsPerStep)));
  const config: RunConfig = parseRunConfig({ ...base, rl: { ...base.rl, promptsPerStep: prompts } }, `${CONFIG_FILE} with --prompts ${prompts}`);
  const warmup: RunConfig = { ...config, rl: { ...config.rl, promptsPerStep: 2 } };
  const weights = await benchWeights(config, store);
  const policy: PolicyRef = { weights };

  const server = await startDevServerOnFreePort({ logFile: path.join(tmp, 'server.log'), detached: false });
  const env = { TEMPORAL_ADDRESS: server.address, ...s3.env(BUCKET, 'store'), AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  const logs = path.join(tmp, 'logs');
  const fixed = [spawnWorker('orchestration', { env, logFile: path.join(logs, 'orchestration.log') }), spawnWorker('tools', { env, logFile: path.join(logs, 'tools.log') })];
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  const rows: ThroughputRow[] = [];
  try {
    await Promise.all(fixed.map((w) => w.ready));
    const rollout = async (cfg: RunConfig, rolloutId: number, label: string): Promise<{ summary: RolloutSummary; ms: number }> => {
      const runId = `bench-scale-${label}-${Date.now().toString(36)}`;
      const input: PlanActRolloutInput = { runId, rolloutId, mode: 'shared', config: cfg, policies: { planner: policy, actor: policy } };
      const t0 = performance.now();
      const summary = (await client.workflow.execute('planActRollout', { taskQueue: TASK_QUEUES.orchestration, workflowId: runId, args: [input] })) as RolloutSummary;
      return { summary, ms: performance.now() - t0 };
    };
    // ABBA order: 1, 2, 2, 1, 1, 2, ... so drift over the run (a neighbour's load) hits both alike.
    const schedule = Array.from({ length: REPEAT }, (_, r) => (r % 2 === 0 ? [1, 2] : [2, 1])).flat();
    for (const [i, n] of schedule.entries()) {
      const rolloutId = Math.floor(i / 2) + 1;
      const inference: WorkerProcess[] = Array.from({ length: n }, (_, k) => spawnWorker('inference', { env, logFile: path.join(logs, `inference-${i}-${k}.log`) }));
      try {
        await Promise.all(inference.map((w) => w.ready));
        await rollout(warmup, 10_000 + i, `warmup-${n}`);
        const procs: Array<[string, number]> = [['server', server.pid], ['orchestration', fixed[0]!.pid], ['tools', fixed[1]!.pid], ['versitygw', s3.pid], ...inference.map((w, k): [string, number] => [`inference-${k + 1}`, w.pid])];
        const cpu0 = procs.map(([, pid]) => processCpuSeconds(pid));
        const { summary, ms } = await rollout(config, rolloutId, `n${n}`);
        const cores = Object.fromEntries(procs.map(([name, pid], k) => [name, round((processCpuSeconds(pid) - cpu0[k]!) / (ms / 1000), 2)]));
        const row: ThroughputRow = { inferenceProcesses: n, rolloutId, episodes: summary.episodes, generations: summary.metrics.generations, seconds: round(ms / 1000, 2), episodesPerMin: round(summary.episodes / (ms / 60_000), 1), meanReward: summary.meanReward, cores };
        rows.push(row);
        console.log(`  ${n} inference process(es), rollout ${rolloutId}: ${row.episodes} episodes, ${row.generations} generations in ${row.seconds} s = ${row.episodesPerMin} episodes/min; cores ${JSON.stringify(cores)}`);
      } finally {
        await Promise.all(inference.map((w) => w.stop()));
      }
    }
  } finally {
    await Promise.all(fixed.map((w) => w.stop()));
    await connection.close();
    await server.stop();
  }
  return rows;
}

/** The policy the rollouts sample: a run's latest published weights (copied into S3), or fresh ones. */
async function benchWeights(config: RunConfig, s3Store: BlobStore): Promise<WeightsInfo> {
  if (WEIGHTS_FROM_RUN) {
    const local = defaultStore();
    const ref = await local.getName(names.latestWeights(WEIGHTS_FROM_RUN));
    if (!ref) throw new Error(`--weights-from-run ${WEIGHTS_FROM_RUN}: that run published no weights in the local store (DURABLE_RL_STORE or .data/store)`);
    const onnx = await s3Store.put(await local.get(ref), ref.kind);
    console.log(`policy: the latest weights of run ${WEIGHTS_FROM_RUN} (${formatBytes(ref.bytes)} ONNX)`);
    return { version: 1, step: 0, onnx };
  }
  const training = createTrainingActivities({ store: s3Store });
  const runId = `bench-scale-${Date.now().toString(36)}`;
  const init = await training.initPolicy({ runId, model: config.model, seed: config.seed });
  console.log(`policy: fresh weights of the config's model (${init.parameters} parameters; give --weights-from-run <id> for a trained one)`);
  return training.publishWeights({ runId, checkpoint: init.checkpoint, version: 0 });
}

function printBlobs(rows: LatencyRow[]): void {
  console.log('\nBlob store latency, ms (p50 / p90 / max), local folder vs S3 (versitygw on this machine)\n');
  console.log('| size | op | local p50 | local p90 | S3 p50 | S3 p90 | S3 / local (p50) | reps |');
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|');
  for (const r of rows.filter((x) => x.store === 'local')) {
    const s = rows.find((x) => x.store === 's3' && x.bytes === r.bytes && x.op === r.op)!;
    console.log(`| ${formatBytes(r.bytes)} | ${r.op} | ${r.p50Ms.toFixed(2)} | ${r.p90Ms.toFixed(2)} | ${s.p50Ms.toFixed(2)} | ${s.p90Ms.toFixed(2)} | ${(s.p50Ms / r.p50Ms).toFixed(1)}x | ${r.reps} |`);
  }
}

function printThroughput(rows: ThroughputRow[]): void {
  console.log('\nRollout throughput: episodes per minute\n');
  console.log('| inference processes | rollouts | episodes each | episodes/min (each) | mean | inference cores used | all cores used |');
  console.log('|---:|---:|---:|---|---:|---:|---:|');
  const means: Record<number, number> = {};
  for (const n of [1, 2]) {
    const mine = rows.filter((r) => r.inferenceProcesses === n);
    if (mine.length === 0) continue;
    means[n] = mine.reduce((a, r) => a + r.episodesPerMin, 0) / mine.length;
    const inf = mean(mine.map((r) => Object.entries(r.cores).filter(([k]) => k.startsWith('inference')).reduce((a, [, v]) => a + v, 0)));
    const all = mean(mine.map((r) => Object.values(r.cores).reduce((a, v) => a + v, 0)));
    console.log(`| ${n} | ${mine.length} | ${mine[0]!.episodes} | ${mine.map((r) => r.episodesPerMin).join(', ')} | ${means[n]!.toFixed(1)} | ${inf.toFixed(2)} | ${all.toFixed(2)} |`);
  }
  if (means[1] && means[2]) console.log(`\ntwo inference processes / one: ${(means[2] / means[1]).toFixed(2)}x (means of the runs above, measured alternately in this run)`);
}

function mean(xs: number[]): number {
  return xs.reduce((a, x) => a + x, 0) / xs.length;
}

function round(x: number, digits: number): number {
  return Math.round(x * 10 ** digits) / 10 ** digits;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
