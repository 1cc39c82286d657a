/**
 * A worker process's settings, from flags or the environment (a flag wins over its variable):
 * where Temporal is and how to authenticate (the variable names are Temporal's own envconfig names,
 * so one environment serves both the `temporal` CLI and these workers), which blob store, how much
 * each queue runs at once, and the metrics port. Every value is validated here, and an error names
 * the flag or variable it came from; a setting that would not apply to this process is an error too.
 */
import fs from 'node:fs';
import { Command, Option } from 'commander';
import type { TLSConfig } from '@temporalio/worker';
import { parseStoreSpec, type Setting, type StoreSettings, type StoreSpec } from '../src/store/store-spec';
import type { TaskQueueName } from '../workflows/task-queues';

export interface TemporalConnectionConfig {
  address: string;
  namespace: string;
  /** TLS settings; absent for a plaintext connection (the local dev server). */
  tls?: TLSConfig;
  apiKey?: string;
}

export interface WorkerProcessConfig {
  queues: readonly TaskQueueName[];
  temporal: TemporalConnectionConfig;
  store: StoreSpec;
  /** Per queue; absent: WORKER_DEFAULTS.concurrency. */
  concurrency: Partial<Record<TaskQueueName, number>>;
  /** Serve Prometheus metrics on this host:port; absent: no metrics endpoint. */
  metrics?: { host: string; port: number };
  /** Folder where worker processes register for failover (workers/attempt-journal.ts); absent: off. */
  attemptJournal?: string;
}

export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';
}

/**
 * What a worker uses where a setting is not given, declared once: --help prints these, parsing and
 * createWorkers apply them, and test/workers/worker-config.test.ts holds the README's queue table
 * to them.
 */
export const WORKER_DEFAULTS = {
  address: '127.0.0.1:7233',
  namespace: 'default',
  metricsHost: '0.0.0.0',
  /** Activities at once per queue: the engine batches inference; training takes one slot per device. */
  concurrency: { orchestration: 16, inference: 64, training: 1, tools: 64 } satisfies Record<TaskQueueName, number>,
} as const;

/** Every setting: its flag, its variable, and what it says (the --help text). */
const SETTINGS = {
  address: { flag: '--address <host:port>', env: 'TEMPORAL_ADDRESS', help: `Temporal frontend (default ${WORKER_DEFAULTS.address})` },
  namespace: { flag: '--namespace <name>', env: 'TEMPORAL_NAMESPACE', help: `Temporal namespace (default "${WORKER_DEFAULTS.namespace}")` },
  tls: { flag: '--tls <true|false>', env: 'TEMPORAL_TLS', help: 'TLS to Temporal; default true when any other TLS setting or an API key is given' },
  tlsCert: { flag: '--tls-cert <path>', env: 'TEMPORAL_TLS_CLIENT_CERT_PATH', help: 'client certificate (PEM) for mTLS, with --tls-key' },
  tlsKey: { flag: '--tls-key <path>', env: 'TEMPORAL_TLS_CLIENT_KEY_PATH', help: 'client private key (PEM) for mTLS, with --tls-cert' },
  tlsCa: { flag: '--tls-ca <path>', env: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', help: "server CA certificate (PEM); default the system's roots" },
  tlsServerName: { flag: '--tls-server-name <name>', env: 'TEMPORAL_TLS_SERVER_NAME', help: 'server name to verify (SNI override)' },
  apiKeyFile: { flag: '--api-key-file <path>', env: undefined, help: 'file holding a Temporal Cloud API key (or set TEMPORAL_API_KEY)' },
  store: { flag: '--store <folder|s3://bucket/prefix>', env: 'DURABLE_RL_STORE', help: 'blob store (default .data/store)' },
  s3Endpoint: { flag: '--s3-endpoint <url>', env: 'DURABLE_RL_S3_ENDPOINT', help: 'S3-compatible endpoint; default AWS S3' },
  s3Region: { flag: '--s3-region <region>', env: 'DURABLE_RL_S3_REGION', help: 'S3 signing region (default AWS_REGION, else us-east-1)' },
  s3PathStyle: { flag: '--s3-path-style <true|false>', env: 'DURABLE_RL_S3_PATH_STYLE', help: 'bucket in the URL path (default true with --s3-endpoint)' },
  orchestrationConcurrency: { flag: '--orchestration-concurrency <n>', env: 'DURABLE_RL_ORCHESTRATION_CONCURRENCY', help: `orchestration activities at once (default ${WORKER_DEFAULTS.concurrency.orchestration})` },
  inferenceConcurrency: { flag: '--inference-concurrency <n>', env: 'DURABLE_RL_INFERENCE_CONCURRENCY', help: `generate/evaluate activities at once, batched by the engine (default ${WORKER_DEFAULTS.concurrency.inference})` },
  trainingSlots: { flag: '--training-slots <n>', env: 'DURABLE_RL_TRAINING_SLOTS', help: `training activities at once (default ${WORKER_DEFAULTS.concurrency.training})` },
  toolsConcurrency: { flag: '--tools-concurrency <n>', env: 'DURABLE_RL_TOOLS_CONCURRENCY', help: `tool and agent activities at once (default ${WORKER_DEFAULTS.concurrency.tools})` },
  metricsPort: { flag: '--metrics-port <port>', env: 'DURABLE_RL_METRICS_PORT', help: 'serve Prometheus metrics (SDK and project) on this port' },
  metricsHost: { flag: '--metrics-host <host>', env: 'DURABLE_RL_METRICS_HOST', help: `address the metrics port binds (default ${WORKER_DEFAULTS.metricsHost}), with --metrics-port` },
  attemptJournal: {
    flag: '--attempt-journal <folder|off>',
    env: 'DURABLE_RL_ATTEMPT_JOURNAL',
    help: 'folder on this host where worker processes register the identity they poll under; a worker that starts fails every attempt the server handed a dead one at once, so they retry without waiting out their heartbeat timeout (default .data/attempts; off: none)',
  },
} as const;

type SettingKey = keyof typeof SETTINGS;

/** Temporal envconfig variables these workers do not read: set, they would be silently ignored. */
const UNSUPPORTED_ENV: Record<string, string> = {
  TEMPORAL_TLS_CLIENT_CERT_DATA: 'TEMPORAL_TLS_CLIENT_CERT_PATH',
  TEMPORAL_TLS_CLIENT_KEY_DATA: 'TEMPORAL_TLS_CLIENT_KEY_PATH',
  TEMPORAL_TLS_SERVER_CA_CERT_DATA: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH with a CA that signed the server certificate',
  TEMPORAL_PROFILE: 'the TEMPORAL_* variables or flags',
  TEMPORAL_CONFIG_FILE: 'the TEMPORAL_* variables or flags',
};

const CONCURRENCY_QUEUE: Record<'orchestrationConcurrency' | 'inferenceConcurrency' | 'trainingSlots' | 'toolsConcurrency', TaskQueueName> = {
  orchestrationConcurrency: 'orchestration',
  inferenceConcurrency: 'inference',
  trainingSlots: 'training',
  toolsConcurrency: 'tools',
};

export interface ParseOptions {
  /** Folder used when no store is named. */
  defaultStoreRoot: string;
  /** Attempt journal folder used when none is named. */
  defaultAttemptJournal: string;
  env?: NodeJS.ProcessEnv;
  /** The program name in --help and errors. */
  name?: string;
}

/** Parses `argv` (the arguments after the script) and the environment for a process serving `queues`. */
export function parseWorkerConfig(queues: readonly TaskQueueName[], argv: readonly string[], opts: ParseOptions): WorkerProcessConfig {
  const env = opts.env ?? process.env;
  const raw = readSettings(argv, env, opts.name ?? 'worker');
  for (const [name, instead] of Object.entries(UNSUPPORTED_ENV)) {
    if (env[name]) throw new WorkerConfigError(`${name} is set, but these workers do not read it; use ${instead}`);
  }

  const concurrency: WorkerProcessConfig['concurrency'] = {};
  for (const [key, queue] of Object.entries(CONCURRENCY_QUEUE) as Array<[keyof typeof CONCURRENCY_QUEUE, TaskQueueName]>) {
    const s = raw[key];
    if (!s) continue;
    if (!queues.includes(queue)) throw new WorkerConfigError(`${s.from} sets the ${queue} queue's concurrency, but this process serves only ${queues.join(', ')}`);
    concurrency[queue] = positiveInt(s);
  }

  const storeSettings: StoreSettings = { store: raw.store, s3Endpoint: raw.s3Endpoint, s3Region: raw.s3Region, s3PathStyle: raw.s3PathStyle };
  let store: StoreSpec;
  try {
    store = parseStoreSpec(storeSettings, opts.defaultStoreRoot, env);
  } catch (err) {
    throw new WorkerConfigError((err as Error).message);
  }

  return {
    queues,
    temporal: temporalConfig(raw, env),
    store,
    concurrency,
    ...metricsConfig(raw),
    ...(raw.attemptJournal?.value === 'off' ? {} : { attemptJournal: raw.attemptJournal?.value ?? opts.defaultAttemptJournal }),
  };
}

function readSettings(argv: readonly string[], env: NodeJS.ProcessEnv, name: string): Partial<Record<SettingKey, Setting>> {
  const program = new Command(name)
    .description('A durable-rl worker process. Each flag may instead be given by the environment variable in brackets; the flag wins.')
    .exitOverride()
    // Errors are thrown as WorkerConfigError and printed once by the caller.
    .configureOutput({ writeErr: () => undefined })
    .allowExcessArguments(false);
  for (const s of Object.values(SETTINGS)) {
    // commander names each value after its flag in camel case: --tls-cert -> tlsCert, the key here.
    program.addOption(new Option(s.flag, s.env ? `${s.help} [${s.env}]` : s.help));
  }
  try {
    program.parse([...argv], { from: 'user' });
  } catch (err) {
    const e = err as { code?: string; message?: string };
    // commander has printed the help already.
    if (e.code === 'commander.helpDisplayed') process.exit(0);
    throw new WorkerConfigError(e.message?.replace(/^error: /, '') ?? String(err));
  }
  const flags = program.opts<Partial<Record<SettingKey, string>>>();
  const out: Partial<Record<SettingKey, Setting>> = {};
  for (const [key, s] of Object.entries(SETTINGS) as Array<[SettingKey, (typeof SETTINGS)[SettingKey]]>) {
    const flag = flags[key];
    // An empty variable counts as unset, as `VAR= command` means in a shell.
    const fromEnv = s.env ? env[s.env] : undefined;
    if (flag !== undefined) out[key] = { value: flag, from: s.flag.split(' ')[0]! };
    else if (fromEnv !== undefined && fromEnv !== '') out[key] = { value: fromEnv, from: s.env! };
  }
  return out;
}

function temporalConfig(raw: Partial<Record<SettingKey, Setting>>, env: NodeJS.ProcessEnv): TemporalConnectionConfig {
  const address = raw.address?.value ?? WORKER_DEFAULTS.address;
  if (!/^[A-Za-z0-9.-]+:\d{1,5}$/.test(address) && !/^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(address)) {
    throw new WorkerConfigError(`${raw.address!.from} must be host:port, got ${JSON.stringify(address)}`);
  }
  const namespace = raw.namespace?.value ?? WORKER_DEFAULTS.namespace;

  if (raw.apiKeyFile && env.TEMPORAL_API_KEY) throw new WorkerConfigError('both --api-key-file and TEMPORAL_API_KEY are set; give the API key one way');
  const apiKey = raw.apiKeyFile ? readFile(raw.apiKeyFile).toString('utf8').trim() : env.TEMPORAL_API_KEY || undefined;
  if (raw.apiKeyFile && !apiKey) throw new WorkerConfigError(`${raw.apiKeyFile.from}: ${raw.apiKeyFile.value} is empty`);

  if ((raw.tlsCert === undefined) !== (raw.tlsKey === undefined)) {
    const given = (raw.tlsCert ?? raw.tlsKey)!;
    throw new WorkerConfigError(`${given.from} needs its pair: mTLS takes both a client certificate (--tls-cert / TEMPORAL_TLS_CLIENT_CERT_PATH) and its key (--tls-key / TEMPORAL_TLS_CLIENT_KEY_PATH)`);
  }
  const tlsDetail = [raw.tlsCert, raw.tlsCa, raw.tlsServerName].find((s) => s !== undefined);
  const explicitTls = raw.tls ? bool(raw.tls) : undefined;
  if (explicitTls === false && (tlsDetail || apiKey)) {
    throw new WorkerConfigError(`${raw.tls!.from} is false, but ${tlsDetail ? tlsDetail.from : 'an API key'} needs TLS`);
  }
  const useTls = explicitTls ?? (tlsDetail !== undefined || apiKey !== undefined);
  const tls: TLSConfig | undefined = useTls
    ? {
        ...(raw.tlsServerName ? { serverNameOverride: raw.tlsServerName.value } : {}),
        ...(raw.tlsCa ? { serverRootCACertificate: pem(raw.tlsCa, 'CERTIFICATE') } : {}),
        ...(raw.tlsCert && raw.tlsKey ? { clientCertPair: { crt: pem(raw.tlsCert, 'CERTIFICATE'), key: pem(raw.tlsKey, 'PRIVATE KEY') } } : {}),
      }
    : undefined;
  return { address, namespace, ...(tls ? { tls } : {}), ...(apiKey ? { apiKey } : {}) };
}

function metricsConfig(raw: Partial<Record<SettingKey, Setting>>): Pick<WorkerProcessConfig, 'metrics'> {
  if (!raw.metricsPort) {
    if (raw.metricsHost) throw new WorkerConfigError(`${raw.metricsHost.from} is set without --metrics-port / DURABLE_RL_METRICS_PORT, so nothing would bind it`);
    return {};
  }
  const port = positiveInt(raw.metricsPort);
  if (port > 65535) throw new WorkerConfigError(`${raw.metricsPort.from} must be a port number (1-65535), got ${raw.metricsPort.value}`);
  return { metrics: { host: raw.metricsHost?.value ?? WORKER_DEFAULTS.metricsHost, port } };
}

function positiveInt(s: Setting): number {
  const n = Number(s.value);
  if (!/^\d+$/.test(s.value) || !Number.isSafeInteger(n) || n < 1) throw new WorkerConfigError(`${s.from} must be a positive integer, got ${JSON.stringify(s.value)}`);
  return n;
}

function bool(s: Setting): boolean {
  if (s.value === 'true') return true;
  if (s.value === 'false') return false;
  throw new WorkerConfigError(`${s.from} must be true or false, got ${JSON.stringify(s.value)}`);
}

function readFile(s: Setting): Buffer {
  try {
    return fs.readFileSync(s.value);
  } catch (err) {
    throw new WorkerConfigError(`${s.from}: cannot read ${s.value} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

/** Reads a PEM file and checks it holds the kind of block expected, so a swapped cert and key fail here, not in a TLS handshake. */
function pem(s: Setting, block: 'CERTIFICATE' | 'PRIVATE KEY'): Buffer {
  const bytes = readFile(s);
  const text = bytes.toString('utf8');
  const ok = block === 'CERTIFICATE' ? text.includes('-----BEGIN CERTIFICATE-----') : /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(text);
  if (!ok) throw new WorkerConfigError(`${s.from}: ${s.value} is not a PEM ${block.toLowerCase()}`);
  return bytes;
}
