/**
 * `npm run scale:local`: a multi-process deployment on this machine, laid out as it would be on a
 * cluster: one process per task queue (orchestration, N inference, training, tools), all sharing a
 * blob store on S3 (versitygw over .data/s3, started here), against the Temporal server (the dev
 * server on :7233 unless TEMPORAL_ADDRESS names one) in a namespace of their own, each with a
 * Prometheus metrics port.
 *
 *   npm run build && npm run scale:local -- [--inference 2] [--config configs/<file>.yaml]
 *
 * Without --config it runs until Ctrl-C; start runs with the Temporal CLI in its namespace. With
 * --config it starts trainingRun with that config, waits for the result, prints it and stops.
 */
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { Client, Connection } from '@temporalio/client';
import { ConfigError } from '../src/config/errors';
import { loadRunConfig } from '../src/config/load';
import { DATA_DIR, REPO_ROOT } from '../src/paths';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { TrainingRunResult } from '../src/contracts/training-run';
import { formatResult } from './lib/format-result';
import { ensureServer } from './lib/local-server';
import { ensureNamespace } from './lib/namespace';
import { startS3Server } from './lib/s3-server';
import { spawnWorker, type WorkerEntry, type WorkerProcess } from './lib/worker-fleet';
import { runMain } from './lib/run-main';

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

async function main(): Promise<number> {
  const opts = new Command('scale:local')
    .option('--inference <n>', 'inference worker processes', positive, 2)
    .option('--namespace <name>', 'Temporal namespace of this deployment', 'durable-rl-scale')
    .option('--s3-port <port>', 'port of the local S3 server (versitygw)', positive, 7070)
    .option('--bucket <name>', 'bucket for the blob store', 'durable-rl')
    .option('--metrics-port <port>', 'first metrics port; the workers take consecutive ones', positive, 9464)
    .option('--config <file>', 'start trainingRun with this config, wait for it, then stop')
    .parse()
    .opts<{ inference: number; namespace: string; s3Port: number; bucket: string; metricsPort: number; config?: string }>();

  let config;
  if (opts.config) {
    try {
      config = loadRunConfig(opts.config);
    } catch (err) {
      if (err instanceof ConfigError) {
        console.error(err.message);
        return 2;
      }
      throw err;
    }
  }

  const logDir = path.join(DATA_DIR, 'logs', 'scale-local');
  const server = await ensureServer();
  await ensureNamespace(server.address, opts.namespace);
  const s3 = await startS3Server({ port: opts.s3Port, dataDir: path.join(DATA_DIR, 's3'), logFile: path.join(logDir, 'versitygw.log') });
  await s3.createBucket(opts.bucket);
  const env = { TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: opts.namespace, ...s3.env(opts.bucket, 'store') };

  const entries: WorkerEntry[] = ['orchestration', ...Array.from({ length: opts.inference }, (): WorkerEntry => 'inference'), 'trainer', 'tools'];
  const workers: WorkerProcess[] = entries.map((entry, i) =>
    spawnWorker(entry, { env: { ...env, DURABLE_RL_METRICS_PORT: String(opts.metricsPort + i) }, logFile: path.join(logDir, `${entry}-${i}.log`) }),
  );
  const stopAll = async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await s3.stop();
  };
  try {
    await Promise.all(workers.map((w) => w.ready));
  } catch (err) {
    await stopAll();
    throw err;
  }

  console.log(`Temporal ${server.address}, namespace ${opts.namespace}; blob store s3://${opts.bucket}/store at ${s3.endpoint} (data in ${path.relative(REPO_ROOT, path.join(DATA_DIR, 's3'))})`);
  console.log('| pid | worker | metrics | log |\n|---:|---|---|---|');
  workers.forEach((w, i) => console.log(`| ${w.pid} | ${w.entry} | http://127.0.0.1:${opts.metricsPort + i}/metrics | ${path.relative(REPO_ROOT, w.logFile)} |`));

  if (!config) {
    console.log(`\nStart runs with the Temporal CLI, e.g.\n  temporal workflow start --address ${server.address} --namespace ${opts.namespace} --task-queue ${TASK_QUEUES.orchestration} --type planActJob --input '{"role":"shared","configFile":"configs/plan-act-shared.yaml","rolloutIds":[1,2]}'\nCtrl-C stops the workers and the S3 server.`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await stopAll();
    return 0;
  }

  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection, namespace: opts.namespace });
  const workflowId = `${config.experiment}-scale-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  let code = 0;
  try {
    const handle = await client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId, args: [config] });
    console.log(`\nstarted trainingRun ${workflowId}${server.uiUrl ? ` (${server.uiUrl}/namespaces/${opts.namespace}/workflows/${encodeURIComponent(workflowId)})` : ''}`);
    console.log(formatResult((await handle.result()) as TrainingRunResult));
  } catch (err) {
    console.error(`run ${workflowId} failed: ${String(err)}`);
    code = 1;
  } finally {
    await connection.close();
    await stopAll();
  }
  return code;
}

runMain(main);
