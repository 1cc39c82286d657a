/**
 * The worker entries against a Temporal frontend behind TLS (a proxy with the test CA in front of
 * the dev server, see test/helpers/tls-proxy.ts): with a client certificate (mTLS, Temporal Cloud's
 * certificate auth) and with an API key, an orchestration worker process connects and runs a
 * workflow; without the certificate, or with a wrong key, it cannot serve.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { spawnWorker } from '../../scripts/lib/worker-fleet';
import { TASK_QUEUES } from '../../workflows/task-queues';
import { createTestNamespace, testAddress, uniqueId } from '../helpers/temporal';
import { startTlsProxy, TLS_FIXTURES, type TlsProxy } from '../helpers/tls-proxy';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-worker-tls-'));
const tls = (name: string) => path.join(TLS_FIXTURES, name);
let namespace: string;
let connection: Connection;
let client: Client;
const proxies: TlsProxy[] = [];
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  namespace = await createTestNamespace('worker-tls');
  connection = await Connection.connect({ address: testAddress() });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  for (const stop of stops) await stop();
  for (const p of proxies) await p.stop();
  await connection?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function orchestrationWorker(address: string, args: string[], env: Record<string, string> = {}) {
  const w = spawnWorker('orchestration', {
    env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: path.join(tmp, 'store'), ...env },
    args: ['--tls-ca', tls('ca.pem'), '--tls-server-name', 'localhost', ...args],
    logFile: path.join(tmp, `${uniqueId('worker')}.log`),
  });
  stops.push(() => w.kill());
  return w;
}

/** A run whose config is refused by the orchestration worker's resolveRunConfig: a workflow task and an activity, both on the TLS-connected worker. */
async function expectRunsThroughWorker(): Promise<void> {
  const handle = await client.workflow.start('trainingRun', { taskQueue: TASK_QUEUES.orchestration, workflowId: uniqueId('tls-run'), args: [{ sft: { steps: -1 } }] });
  const err = await handle.result().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  expect(String((err as WorkflowFailedError).cause?.message)).toMatch(/sft\.steps/);
}

it('connects with a client certificate (mTLS), and cannot without one', async () => {
  const proxy = await startTlsProxy({ target: testAddress(), clientCert: true });
  proxies.push(proxy);
  const withCert = orchestrationWorker(proxy.address, ['--tls-cert', tls('client.pem'), '--tls-key', tls('client-key.pem')]);
  await withCert.ready;
  await expectRunsThroughWorker();
  await withCert.stop();

  const withoutCert = orchestrationWorker(proxy.address, []);
  await expect(withoutCert.ready).rejects.toThrow(/exited \(1\) before serving/);
  // The client sees either the CertificateRequired alert or a closed connection, depending on
  // timing under TLS 1.3; the proxy's record of why it refused the handshake is stable.
  expect(fs.readFileSync(withoutCert.logFile, 'utf8')).toMatch(/TransportError/);
  expect(proxy.refusedHandshakes.join('\n')).toMatch(/certificate/i);
}, 120_000);

it('connects with an API key over TLS, and cannot with a wrong one', async () => {
  const proxy = await startTlsProxy({ target: testAddress(), clientCert: false, apiKey: 'test-api-key' });
  proxies.push(proxy);
  const withKey = orchestrationWorker(proxy.address, [], { TEMPORAL_API_KEY: 'test-api-key' });
  await withKey.ready;
  await expectRunsThroughWorker();
  await withKey.stop();

  fs.writeFileSync(path.join(tmp, 'wrong-key'), 'not-the-key\n');
  const wrongKey = orchestrationWorker(proxy.address, ['--api-key-file', path.join(tmp, 'wrong-key')]);
  await expect(wrongKey.ready).rejects.toThrow(/exited \(1\) before serving/);
  expect(fs.readFileSync(wrongKey.logFile, 'utf8')).toMatch(/missing or wrong API key/);
}, 120_000);
