/** A worker process's settings: flags over environment, Temporal TLS, and errors naming the setting. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../src/paths';
import { TASK_QUEUES, type TaskQueueName } from '../../workflows/task-queues';
import { parseWorkerConfig, WORKER_DEFAULTS, WorkerConfigError } from '../../workers/worker-config';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-worker-config-'));
const file = (name: string, text: string) => {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text);
  return p;
};
const CERT = file('client.pem', '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
const KEY = file('client.key', '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n');

const parse = (argv: string[], env: Record<string, string> = {}, queues: Parameters<typeof parseWorkerConfig>[0] = ['inference']) =>
  parseWorkerConfig(queues, argv, { defaultStoreRoot: '/repo/.data/store', defaultAttemptJournal: '/repo/.data/attempts', env });

describe('parseWorkerConfig', () => {
  it('has local defaults: the dev server, plaintext, the local folder store, no metrics, the attempt journal in .data', () => {
    expect(parse([])).toEqual({
      queues: ['inference'],
      temporal: { address: '127.0.0.1:7233', namespace: 'default' },
      store: { kind: 'fs', root: '/repo/.data/store' },
      concurrency: {},
      attemptJournal: '/repo/.data/attempts',
    });
  });

  it('keeps the attempt journal where told, or none with off', () => {
    expect(parse(['--attempt-journal', '/var/lib/durable-rl/attempts']).attemptJournal).toBe('/var/lib/durable-rl/attempts');
    expect(parse([], { DURABLE_RL_ATTEMPT_JOURNAL: 'off' })).not.toHaveProperty('attemptJournal');
  });

  it('takes every setting from the environment, and a flag wins over its variable', () => {
    const env = { TEMPORAL_ADDRESS: 'temporal.internal:7233', TEMPORAL_NAMESPACE: 'rl', DURABLE_RL_INFERENCE_CONCURRENCY: '8', DURABLE_RL_METRICS_PORT: '9464' };
    expect(parse([], env)).toMatchObject({ temporal: { address: 'temporal.internal:7233', namespace: 'rl' }, concurrency: { inference: 8 }, metrics: { host: '0.0.0.0', port: 9464 } });
    const c = parse(['--namespace', 'other', '--inference-concurrency', '16', '--store', 's3://bucket/p', '--s3-endpoint', 'https://s3.example.com'], env);
    expect(c).toMatchObject({ temporal: { namespace: 'other' }, concurrency: { inference: 16 }, store: { kind: 's3', bucket: 'bucket', prefix: 'p', endpoint: 'https://s3.example.com' } });
  });

  it('builds TLS for mTLS (Temporal Cloud certificates) and for API keys', () => {
    const mtls = parse(['--tls-cert', CERT, '--tls-key', KEY, '--tls-server-name', 'ns.acct.tmprl.cloud']).temporal;
    expect(mtls.tls?.serverNameOverride).toBe('ns.acct.tmprl.cloud');
    expect(Buffer.from(mtls.tls!.clientCertPair!.crt).toString()).toContain('BEGIN CERTIFICATE');
    expect(parse([], { TEMPORAL_API_KEY: 'k-123' }).temporal).toEqual({ address: '127.0.0.1:7233', namespace: 'default', tls: {}, apiKey: 'k-123' });
    expect(parse(['--api-key-file', file('key.txt', 'k-456\n')]).temporal.apiKey).toBe('k-456');
    expect(parse(['--tls', 'true']).temporal.tls).toEqual({});
  });

  it.each([
    [['--tls-cert', CERT], {}, /--tls-cert needs its pair/],
    [['--tls-key', KEY, '--tls-cert', KEY], {}, /--tls-cert: .* is not a PEM certificate/],
    [[], { TEMPORAL_TLS_CLIENT_CERT_PATH: '/nonexistent.pem', TEMPORAL_TLS_CLIENT_KEY_PATH: KEY }, /TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read \/nonexistent.pem \(ENOENT\)/],
    [['--tls', 'false'], { TEMPORAL_API_KEY: 'k' }, /--tls is false, but an API key needs TLS/],
    [['--api-key-file', KEY], { TEMPORAL_API_KEY: 'k' }, /both --api-key-file and TEMPORAL_API_KEY are set/],
    [[], { TEMPORAL_TLS_CLIENT_CERT_DATA: 'x' }, /TEMPORAL_TLS_CLIENT_CERT_DATA is set, but these workers do not read it; use TEMPORAL_TLS_CLIENT_CERT_PATH/],
    [['--address', 'no-port'], {}, /--address must be host:port/],
    [[], { DURABLE_RL_TRAINING_SLOTS: '2' }, /DURABLE_RL_TRAINING_SLOTS sets the training queue's concurrency, but this process serves only inference/],
    [['--inference-concurrency', '0'], {}, /--inference-concurrency must be a positive integer, got "0"/],
    [['--metrics-port', '70000'], {}, /--metrics-port must be a port number/],
    [[], { DURABLE_RL_METRICS_HOST: '127.0.0.1' }, /DURABLE_RL_METRICS_HOST is set without --metrics-port/],
    [['--s3-region', 'eu-west-1'], {}, /--s3-region is set, but the blob store .* is a local folder/],
    [['--bogus'], {}, /unknown option '--bogus'/],
  ])('rejects %j %j', (argv, env, message) => {
    expect(() => parse(argv, env)).toThrow(WorkerConfigError);
    expect(() => parse(argv, env)).toThrow(message);
  });

  it('treats an empty variable as unset', () => {
    expect(parse([], { TEMPORAL_ADDRESS: '', DURABLE_RL_STORE: '' })).toMatchObject({ temporal: { address: '127.0.0.1:7233' }, store: { kind: 'fs' } });
  });
});

describe('the defaults are declared once', () => {
  const readme = fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');

  it("the README's queue table gives each queue's default concurrency from WORKER_DEFAULTS", () => {
    const stated = (Object.keys(WORKER_DEFAULTS.concurrency) as TaskQueueName[]).map((q) => {
      const row = readme.split('\n').find((line) => line.startsWith(`| \`${TASK_QUEUES[q]}\` |`));
      return [q, Number(row?.split('|')[3]?.trim().split(' ')[0])];
    });
    expect(Object.fromEntries(stated)).toEqual(WORKER_DEFAULTS.concurrency);
  });

  it("the README gives the Temporal address's default from WORKER_DEFAULTS", () => {
    expect(readme).toContain(`\`TEMPORAL_ADDRESS\` (default ${WORKER_DEFAULTS.address})`);
  });

  it('parsing applies the declared defaults', () => {
    expect(parse([]).temporal).toEqual({ address: WORKER_DEFAULTS.address, namespace: WORKER_DEFAULTS.namespace });
    expect(parse(['--metrics-port', '9464']).metrics).toEqual({ host: WORKER_DEFAULTS.metricsHost, port: 9464 });
  });
});
