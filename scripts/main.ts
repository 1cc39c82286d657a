/**
 * The main job: validate the config (what the run's activities would refuse too,
 * src/config/start-checks.ts), make sure a Temporal server is up and its namespace has the
 * project's search attributes, start the workers for every queue in this process (for asynchronous
 * RL the training queue's in a child process), start trainingRun through the Temporal CLI, show
 * progress until it finishes, print the result and where to inspect it. Exits non-zero on failure,
 * on a run that cannot go on, and on SIGINT/SIGTERM (workers drained, the run left on the server
 * for --resume); a server outage is waited out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import { Client, Connection, WorkflowFailedError, WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, makeTelemetryFilterString, NativeConnection, Runtime } from '@temporalio/worker';
import { loadRunConfig } from '../src/config/load';
import { parseRunConfig } from '../src/config/parse';
import { ConfigError } from '../src/config/errors';
import { checkStartable } from '../src/config/start-checks';
import { DATA_DIR, REPO_ROOT, defaultRunsDir } from '../src/paths';
import { createWorkers, defaultStore } from '../workers/create-workers';
import { progressQuery } from '../workflows/messages';
import { TASK_QUEUES } from '../workflows/task-queues';
import type { TrainingRunResult } from '../src/contracts/training-run';
import { ensureServer } from './lib/local-server';
import { checkTracker, withLocalTracking, type TrackerCheck } from './lib/tracker-check';
import { LOCAL_MLFLOW_URI } from './lib/mlflow-server';
import { makeTensorboardRunDir, tensorboardRunDir } from '../src/tracking/tensorboard';
import { tensorboardEnvDir } from '../src/paths';
import { workflowUiUrl } from '../src/viewer/links';
import { runTemporalCli } from './lib/temporal-cli';
import { formatResult } from './lib/format-result';
import { ensureRemoteEngine } from './lib/remote-engine-for-run';
import { runMain } from './lib/run-main';
import { ensureNamespace } from './lib/namespace';
import { startWorkerProcess, type WorkerProcessOptions } from './lib/worker-process';
import { startTorchWorker } from './lib/torch-worker';
import { reniceProcess } from './lib/niced';
import { followProgress, progressDisplay } from './lib/progress-display';
import { listenForStopSignals, signalExitCode } from './lib/stop-signals';
import type { StuckTask } from './lib/stuck-workflow-task';
import { waitForRun } from './lib/wait-for-run';
import { missingSearchAttributes, NamespaceSetupError, searchAttributeCommands } from '../workers/namespace-setup';
import { SEARCH_ATTRIBUTE_TYPES } from '../workflows/search-attributes';

/**
 * Niceness of the rollout side (this process, the local dev server, a vLLM started here) in an
 * asynchronous run: 1.18× → 1.35× the synchronous schedule's speed with k = 2 on a 2-core machine
 * (docs/async-rl.md, "Measured"). Nothing else changes: niceness matters only when processes
 * contend for a core.
 */
const ROLLOUT_NICE = 10;

async function main(): Promise<number> {
  const program = new Command()
    .name('durable-rl')
    .description('Run a durable-rl training run on Temporal')
    .option('-c, --config <file>', 'run config (YAML or JSON)', path.join(REPO_ROOT, 'configs', 'default.yaml'))
    .option('--workflow-id <id>', 'workflow id (default: <experiment>-<timestamp>)')
    .option('--seed <n>', 'override the config\'s seed (problems, initial weights, sampling)')
    .option('--track', `log the run to MLflow: tracking.mlflow with the local default (${LOCAL_MLFLOW_URI}, started here if nothing answers; experiment: the config's experiment)`)
    .option('--resume <id>', 'continue run <id> with the config it was started with: still running on the server (its process died), it goes on where it is; terminated or failed, it starts again from its last saved step')
    .parse();
  const opts = program.opts<{ config: string; workflowId?: string; resume?: string; seed?: string; track?: boolean }>();

  const runsDir = defaultRunsDir();
  let config;
  try {
    if (opts.resume) {
      // The run's own config, as it was started (the workflow refuses another: claimRunId); the
      // options that would choose another are refused rather than ignored.
      const given = (['config', 'seed', 'workflowId', 'track'] as const).filter((k) => program.getOptionValueSource(k) === 'cli');
      if (given.length > 0) {
        console.error(`--resume ${opts.resume}: the run goes on with the config it was started with; drop ${given.map((k) => `--${k === 'workflowId' ? 'workflow-id' : k}`).join(', ')}`);
        return 2;
      }
      const started = path.join(runsDir, `${opts.resume}.input.json`);
      if (!fs.existsSync(started)) {
        console.error(`--resume ${opts.resume}: no ${started} (was the run started by this main job, with the same DURABLE_RL_RUNS?)`);
        return 2;
      }
      // The workflow's input as written below, every default filled in: parsed as the workflow parses it.
      config = parseRunConfig(JSON.parse(fs.readFileSync(started, 'utf8')), started);
    } else {
      config = loadRunConfig(opts.config);
      if (opts.seed !== undefined) config = parseRunConfig({ ...config, seed: Number(opts.seed) }, `${opts.config} with --seed ${opts.seed}`);
      if (opts.track) config = withLocalTracking(config, opts.config);
      // What the run's activities would refuse once it started (a starting policy that cannot load, say), refused now.
      checkStartable(config, opts.config, { workflow: 'trainingRun' });
    }
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    throw err;
  }

  // tracking.mlflow: the tracker checked (and the local default's server started) before anything starts.
  let tracker: TrackerCheck | undefined;
  if (config.tracking?.mlflow) {
    const checked = await checkTracker(config, opts.resume ? 'resume' : 'start');
    if ('error' in checked) {
      console.error(`invalid config ${opts.resume ? `of run ${opts.resume}` : opts.config}:\n  - ${checked.error.path}: ${checked.error.message}`);
      return 2;
    }
    tracker = checked;
    console.log(`MLflow:      ${tracker.uri}${tracker.startedHere ? ` (started mlflow server, SQLite .data/mlflow, pid ${tracker.pid})` : ''}, experiment '${config.tracking.mlflow.experiment}'`);
  }
  // tracking.tensorboard: the log directory made and checked writable before anything starts (the run checks its own folder again).
  const tensorboardProblem = config.tracking?.tensorboard && (await makeTensorboardRunDir(path.resolve(REPO_ROOT, config.tracking.tensorboard.dir)));
  if (tensorboardProblem) {
    console.error(`invalid config ${opts.resume ? `of run ${opts.resume}` : opts.config}:\n  - ${tensorboardProblem.path}: ${tensorboardProblem.message}`);
    return 2;
  }

  // Worker and workflow logs (per-chunk losses, evaluations) go to a file; the terminal shows progress.
  const logFile = path.join(DATA_DIR, 'logs', 'workers.log');
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry) => {
      log.write(`${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} ${entry.level} ${entry.message} ${JSON.stringify(entry.meta ?? {}, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}\n`);
      if (entry.level === 'ERROR') console.error(`[worker] ${entry.message}`);
    }),
    // The SDK's own warnings (a call retried while the server is away: hundreds a minute) to the log too.
    telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) } },
    // This process stops its workers itself on a signal (below), and then ends.
    shutdownSignals: [],
  });

  // What was started here, stopped in reverse order when the job ends (or is stopped before its run started).
  const teardown: Array<() => Promise<unknown>> = [];
  const stopAll = async (): Promise<void> => {
    for (const step of teardown.splice(0).reverse()) await step();
  };
  let runStarted = false;
  const stop = listenForStopSignals();
  void stop.received.then(async (signal) => {
    if (runStarted) return;
    // Nothing of the run exists yet: nothing to leave resumable.
    console.error(`\n${signal}: stopping before the run started`);
    await stopAll();
    process.exit(signalExitCode(signal));
  });

  const server = await ensureServer();
  console.log(`Temporal server: ${server.address}${server.startedHere ? ' (started dev server, SQLite .data/temporal.db)' : ''}`);

  // TEMPORAL_NAMESPACE as the separate workers read it (workers/worker-config.ts; empty is unset):
  // created if need be, with the project's search attributes (without them its runs would hang).
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  try {
    await ensureNamespace(server.address, namespace, { log: (line) => console.log(line) });
  } catch (err) {
    if (!(err instanceof NamespaceSetupError)) throw err;
    console.error(err.message);
    return 2;
  }

  // Asynchronous RL trains while rollouts run: tfjs's synchronous training would hold this
  // process's event loop, and the rollouts with it, so the trainer gets a process of its own; and
  // the update is what every later step waits for, so everything else yields it the CPU (nice).
  const trainerApart = (config.rl.async?.maxStaleness ?? 0) >= 1;
  // configs/vllm.yaml: a real vLLM serves the RL rollouts; started here when it is not running yet.
  const vllm = await ensureRemoteEngine(config, trainerApart ? { nice: ROLLOUT_NICE } : {});
  if (vllm) {
    teardown.push(() => vllm.stop());
    console.log(`vLLM: ${vllm.baseUrl}/v1 (pid ${vllm.pid}), stopped when the run ends`);
  }

  const nativeConnection = await NativeConnection.connect({ address: server.address });
  teardown.push(() => nativeConnection.close());
  // trainer.backend torch: the PyTorch worker serves the training activities, a process of its own.
  const torchTrainer = config.trainer?.backend === 'torch';
  const trainer = torchTrainer
    ? await startTorchWorker({ ...trainerConnection(server.address, namespace), logFile: path.join(DATA_DIR, 'logs', 'torch-worker.log') })
    : trainerApart
      ? await startWorkerProcess(trainerProcessOptions(server.address, namespace))
      : undefined;
  if (trainer) {
    teardown.push(() => trainer.stop());
    console.log(`trainer:     ${torchTrainer ? 'the torch worker' : 'a process of its own'} (pid ${trainer.pid}, log ${path.relative(REPO_ROOT, trainer.logFile)})${trainerApart ? ', for asynchronous RL' : ''}`);
  }
  if (trainer && trainerApart) {
    // After the trainer started (it keeps its priority), before this process's workers start their threads (they inherit).
    reniceProcess(process.pid, ROLLOUT_NICE);
    if (server.pid) reniceProcess(server.pid, ROLLOUT_NICE);
    console.log(`rollouts:    this process${server.pid ? ' and the dev server' : ''}${vllm ? ' and vLLM' : ''} at nice +${ROLLOUT_NICE}, so the update keeps its core`);
  }
  const workers = await createWorkers({
    connection: nativeConnection,
    namespace,
    queues: trainer ? ['orchestration', 'inference', 'tools'] : ['orchestration', 'inference', 'training', 'tools'],
    store: defaultStore(),
    ...(server.uiUrl ? { temporalUiUrl: server.uiUrl } : {}),
  });
  const running = workers.map((w) => w.run());
  // Drained: shutdown lets the activities in flight end (cancelled, retried by the workers of a resumed job).
  teardown.push(async () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.allSettled(running);
  });

  const workflowId = opts.resume ?? opts.workflowId ?? `${config.experiment}-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const inputFile = path.join(runsDir, `${workflowId}.input.json`);
  if (!opts.resume) {
    fs.mkdirSync(runsDir, { recursive: true });
    fs.writeFileSync(inputFile, JSON.stringify(config, null, 2));
  }
  // Reconnects within seconds of a server's return (gRPC's backoff otherwise grows to 2 minutes).
  const connection = await Connection.connect({ address: server.address, channelArgs: { 'grpc.initial_reconnect_backoff_ms': 500, 'grpc.max_reconnect_backoff_ms': 2_000 } });
  teardown.push(() => connection.close());
  const client = new Client({ connection, namespace });
  const handle = client.workflow.getHandle(workflowId);
  if (opts.resume && (await isRunning(handle))) {
    // The machine (or this process) stopped while the run was in flight: the server kept it, and the
    // workers started above pick it up where its history ends.
    console.log(`run ${workflowId} is still running on the server: continuing it with this process's workers`);
  } else {
    const resumeFile = path.join(runsDir, `${workflowId}.resume.json`);
    if (opts.resume) fs.writeFileSync(resumeFile, JSON.stringify({ fromSavedState: true }));
    const startArgs = [
      'workflow', 'start', '--address', server.address, '--namespace', namespace,
      '--task-queue', TASK_QUEUES.orchestration, '--type', 'trainingRun',
      '--workflow-id', workflowId, '--input-file', inputFile,
      ...(opts.resume ? ['--input-file', resumeFile] : []),
    ];
    console.log(`$ temporal ${startArgs.join(' ')}`);
    runTemporalCli(startArgs);
  }
  runStarted = true;
  console.log(`workflow id: ${workflowId}`);
  if (server.uiUrl) console.log(`Web UI:      ${workflowUiUrl(server.uiUrl, namespace, workflowId)}`);
  console.log(`worker log:  ${path.relative(REPO_ROOT, logFile)}`);
  if (config.tracking?.tensorboard) {
    const logDir = path.resolve(REPO_ROOT, config.tracking.tensorboard.dir);
    console.log(`TensorBoard: ${tensorboardRunDir(logDir, workflowId)} (watch: ${path.join(tensorboardEnvDir(), 'bin', 'tensorboard')} --logdir ${logDir})`);
  }
  // The run opens its MLflow run as it starts: its link once it has.
  const mlflowLink = tracker ? tracker.runUrl(workflowId) : Promise.resolve(undefined);

  const display = progressDisplay();
  if (tracker) void mlflowLink.then((url) => display.log(`MLflow run:  ${url ?? `not opened yet; the experiment: ${tracker.experimentUrl}`}`));
  // Bounded: a query sent as the server went away may never be answered, and would hold the next ones back.
  const stopProgress = followProgress(() => connection.withDeadline(Date.now() + 10_000, () => handle.query(progressQuery)), display);
  // The job stops here, the run kept on the server, on a signal or (asynchronous RL) when its
  // trainer process dies: the run would wait for a training worker.
  const interrupt = Promise.race([
    stop.received.then((signal) => ({ why: `${signal} received`, code: signalExitCode(signal) })),
    ...(trainer ? [trainer.exited.then((why) => ({ why, code: 1 }))] : []),
  ]);
  const end = await waitForRun({ handle, service: connection.workflowService, namespace, address: server.address, interrupt, say: (line) => display.log(line) });
  // The run's own end: one last poll, so the last progress line is where it ended.
  await stopProgress(end.kind === 'completed' || end.kind === 'failed');
  const resume = `continue it with --resume ${workflowId}:\n  bash scripts/main.sh --resume ${workflowId}`;
  let code = 0;
  switch (end.kind) {
    case 'completed':
      console.log(formatResult(end.result as TrainingRunResult));
      // The result beside the input, for scripts/summarize-runs.ts and anyone comparing runs later.
      fs.writeFileSync(path.join(runsDir, `${workflowId}.result.json`), JSON.stringify(end.result, null, 2));
      break;
    case 'failed':
      console.error(`run ${workflowId} failed: ${describeFailure(end.error)}`);
      code = 1;
      break;
    case 'stuck':
      console.error(`run ${workflowId} cannot go on: ${await describeStuck(end.task, connection, namespace, server.address)}\nThe run stays on the server: once that is fixed, ${resume}`);
      code = 1;
      break;
    case 'interrupted':
      console.error(`run ${workflowId} stopped here: ${end.why}; this process's workers stop, and the run stays on the server: ${resume}`);
      code = end.code;
      break;
  }
  console.log(`workflow id: ${workflowId}`);
  const mlflowUrl = await mlflowLink;
  if (mlflowUrl) console.log(`MLflow run:  ${mlflowUrl}`);
  if (server.uiUrl) {
    console.log(`Web UI:      ${workflowUiUrl(server.uiUrl, namespace, workflowId)}`);
    console.log(server.startedHere
      ? 'The dev server keeps running for the Web UI; stop it with `npm run server:stop`, reopen later with `npm run ui`.'
      : 'The dev server was already running and keeps running.');
  }
  await stopAll();
  return code;
}

/** A workflow task that keeps failing, and what fixes it where the project knows. */
async function describeStuck(task: StuckTask, connection: Connection, namespace: string, address: string): Promise<string> {
  const what = `the workflow task of ${task.workflowId} failed ${task.attempt - 1} times in a row (${task.cause}: ${task.message}), and no retry fixes that.`;
  if (task.cause !== 'BAD_SEARCH_ATTRIBUTES') return what;
  const missing = await missingSearchAttributes(connection, namespace).catch(() => Object.keys(SEARCH_ATTRIBUTE_TYPES));
  return `${what} Register the search attributes the namespace lacks:\n${searchAttributeCommands(missing, namespace, address).map((c) => `  ${c}`).join('\n')}`;
}

/**
 * The trainer process (the tfjs one apart for asynchronous RL, or the torch worker) connects as this
 * process does (its address and namespace, the same blob store and runs folder from the environment).
 * Worker settings this process never reads — other queues' concurrency, a metrics port, TLS — are
 * blanked (empty is unset, workers/worker-config.ts):
 * the trainer would refuse another queue's setting, and would connect where the main job does not.
 */
function trainerConnection(address: string, namespace: string): { address: string; namespace: string; env: Record<string, string> } {
  const unread = [
    'DURABLE_RL_ORCHESTRATION_CONCURRENCY', 'DURABLE_RL_INFERENCE_CONCURRENCY', 'DURABLE_RL_TOOLS_CONCURRENCY',
    'DURABLE_RL_METRICS_PORT', 'DURABLE_RL_METRICS_HOST', 'TEMPORAL_TLS', 'TEMPORAL_TLS_CLIENT_CERT_PATH',
    'TEMPORAL_TLS_CLIENT_KEY_PATH', 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', 'TEMPORAL_TLS_SERVER_NAME', 'TEMPORAL_API_KEY',
  ];
  return { address, namespace, env: Object.fromEntries(unread.map((k) => [k, ''])) };
}

function trainerProcessOptions(address: string, namespace: string): WorkerProcessOptions {
  const c = trainerConnection(address, namespace);
  return {
    entry: path.join(REPO_ROOT, 'dist', 'workers', 'trainer.js'),
    env: { ...c.env, TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace },
    logFile: path.join(DATA_DIR, 'logs', 'trainer.log'),
  };
}

/** Whether the server holds <id> as running (a run whose workers stopped with the machine, say). */
async function isRunning(handle: WorkflowHandle): Promise<boolean> {
  try {
    return (await handle.describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

function describeFailure(err: unknown): string {
  if (err instanceof WorkflowFailedError) {
    const cause = err.cause;
    return cause ? `${cause.name}: ${cause.message}` : err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

runMain(main);
