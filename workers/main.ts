/**
 * Shared entry logic: read the process's settings (flags or environment, workers/worker-config.ts),
 * open the blob store, connect to Temporal (a process that runs workflows makes sure its namespace has
 * the project's search attributes), optionally serve metrics, and run the workers for the given
 * queues until SIGINT/SIGTERM. Each workers/<queue>.ts file is a one-line call of this.
 */
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { DATA_DIR } from '../src/paths';
import { describeStore, openCheckedStore } from '../src/store/store-spec';
import type { TaskQueueName } from '../workflows/task-queues';
import type { WorkerSetup } from './create-workers';
import { failDeadWorkersAttempts, register, thisWorker } from './attempt-journal';
import { ensureNamespaceReady, NamespaceSetupError } from './namespace-setup';
import { activityMetrics } from './metrics/activity-metrics';
import { startMetricsServer, type MetricsServer } from './metrics/metrics-server';
import { ProjectMetrics } from './metrics/project-metrics';
import { installSdkMetrics } from './metrics/sdk-metrics';
import { parseWorkerConfig, WorkerConfigError } from './worker-config';

/** `argv`: the flags after the script name (the freezing test worker passes none and uses the environment). */
export async function runWorkerProcess(queues: readonly TaskQueueName[], argv: readonly string[] = [], extra: Pick<WorkerSetup, 'localCalls'> = {}): Promise<void> {
  const config = parseWorkerConfig(queues, argv, {
    defaultStoreRoot: path.join(DATA_DIR, 'store'),
    defaultAttemptJournal: path.join(DATA_DIR, 'attempts'),
    name: `workers/${queues.length === 1 ? queues[0] : 'all'}`,
  });
  let metrics: { project: ProjectMetrics; server: MetricsServer } | undefined;
  if (config.metrics) {
    // Before the connection: the SDK's exporter is part of the Runtime, installed once per process.
    const sdk = await installSdkMetrics();
    const project = new ProjectMetrics();
    metrics = { project, server: await startMetricsServer({ ...config.metrics, registry: project.registry, sdkUrl: sdk.url }) };
  }
  if (process.env.DURABLE_RL_EXIT_WITH_PARENT === '1') exitWithParent();
  const store = await openCheckedStore(config.store);
  const { address, namespace, tls, apiKey } = config.temporal;
  const self = thisWorker({ address, namespace });
  const journal = config.attemptJournal ? { dir: config.attemptJournal, address, namespace } : undefined;
  const log = (line: string) => console.log(`[worker ${process.pid}] attempt journal: ${line}`);
  // Registered before this process polls, so that a replacement can fail every attempt it takes.
  const registration = journal ? register(journal.dir, self) : undefined;
  if (registration?.warning) log(registration.warning);
  const connection = await NativeConnection.connect({ address, ...(tls ? { tls } : {}), ...(apiKey ? { apiKey } : {}) });
  try {
    // The attempts dead predecessors held are failed first: loading the activities (the model code,
    // tfjs, ONNX Runtime) takes seconds on a busy host, and blocks this thread while it does.
    if (journal) (await failDeadWorkersAttempts(connection, journal)).forEach(log);
    // Workflow code sets the project's search attributes: without them its tasks fail forever.
    if (queues.includes('orchestration')) await ensureNamespaceReady(connection, namespace, { address, log: (line) => console.log(`[worker ${process.pid}] ${line}`) });
    const { createWorkers } = await import('./create-workers');
    const interceptors = metrics ? [activityMetrics(metrics.project)] : [];
    const workers = await createWorkers({
      connection,
      queues,
      store,
      namespace,
      identity: self.identity,
      inferenceConcurrency: config.concurrency.inference,
      trainingSlots: config.concurrency.training,
      orchestrationConcurrency: config.concurrency.orchestration,
      toolsConcurrency: config.concurrency.tools,
      ...(interceptors.length > 0 ? { activityInterceptors: interceptors } : {}),
      ...extra,
    });
    const served = metrics ? `, metrics at ${metrics.server.url}` : '';
    console.log(`[worker ${process.pid}] serving ${queues.join(', ')} at ${address} (namespace ${namespace}${tls ? ', TLS' : ''}), blob store ${describeStore(config.store)}${served}, identity ${self.identity}`);
    await Promise.all(workers.map((w) => w.run()));
  } finally {
    registration?.unregister();
    await connection.close();
    await metrics?.server.close();
  }
}

/**
 * DURABLE_RL_EXIT_WITH_PARENT=1, set by a script that starts this worker as its child (the main
 * job's trainer, scripts/lib/worker-process.ts) with stdin a pipe from it: when that pipe closes the
 * parent is gone, however it died (SIGKILL too), and this worker shuts down as on SIGTERM instead of
 * serving on as an orphan beside the workers a resumed parent starts.
 */
function exitWithParent(): void {
  process.stdin.on('data', () => undefined);
  process.stdin.once('close', () => process.kill(process.pid, 'SIGTERM'));
  // Watching the pipe must not keep the process up once its workers have shut down.
  process.stdin.unref();
}

export function main(queues: readonly TaskQueueName[]): void {
  runWorkerProcess(queues, process.argv.slice(2)).catch((err: unknown) => {
    // A bad setting is the user's to fix: its message names it, a stack trace would only bury it.
    const yours = err instanceof WorkerConfigError || err instanceof NamespaceSetupError;
    console.error(yours ? `${err.name}: ${err.message}` : err);
    process.exit(yours ? 2 : 1);
  });
}
