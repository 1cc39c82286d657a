/**
 * The worker processes that run workflows make sure their namespace can (workers/namespace-setup.ts,
 * issue 36 item 4): the project's search attributes are registered where missing, and a namespace
 * that does not exist, or has one of them with another type, stops the worker at once (exit 2) with
 * a message that says what to run, instead of a worker whose workflow tasks fail forever.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { REPO_ROOT } from '../../src/paths';
import { ensureNamespaceReady, NamespaceSetupError } from '../../workers/namespace-setup';
import { testAddress, uniqueId } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';

let connection: Connection;
const store = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-namespace-setup-'));

beforeAll(async () => {
  connection = await Connection.connect({ address: testAddress() });
});

afterAll(async () => {
  await connection?.close();
  fs.rmSync(store, { recursive: true, force: true });
});

/** A namespace with none of the project's search attributes (or `attributes`). */
const bareNamespace = async (attributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {}): Promise<string> => {
  const namespace = uniqueId('bare');
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  if (Object.keys(attributes).length > 0) await waitFor('the namespace known', () => connection.operatorService.addSearchAttributes({ namespace, searchAttributes: attributes }).then(() => true), 30_000);
  return namespace;
};
const attributes = async (namespace: string) => (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
const INDEXED = temporal.api.enums.v1.IndexedValueType;

/** dist/workers/orchestration.js, until it stops by itself or says it serves (then SIGTERMed): its exit code and output. */
const orchestrationWorker = (namespace: string): Promise<{ code: number | null; out: string }> => {
  const env = { ...process.env, TEMPORAL_ADDRESS: testAddress(), TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: store, DURABLE_RL_ATTEMPT_JOURNAL: path.join(store, 'attempts') };
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'workers', 'orchestration.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const read = (b: Buffer) => {
    out += b.toString();
    if (out.includes('serving')) child.kill('SIGTERM');
  };
  child.stdout.on('data', read);
  child.stderr.on('data', read);
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
};

it('registers what a namespace lacks, and leaves a complete one as it is', async () => {
  const namespace = await bareNamespace({ Experiment: INDEXED.INDEXED_VALUE_TYPE_KEYWORD });
  const lines: string[] = [];
  await ensureNamespaceReady(connection, namespace, { address: testAddress(), log: (l) => lines.push(l) });
  expect(lines).toEqual([`registered the search attributes Role, RolloutId, Step, FellBack in namespace ${namespace}`]);
  expect(Object.keys(await attributes(namespace)).sort()).toEqual(['Experiment', 'FellBack', 'Role', 'RolloutId', 'Step']);
  await ensureNamespaceReady(connection, namespace, { address: testAddress(), log: (l) => lines.push(l) });
  expect(lines).toHaveLength(1);
});

it('creates a missing namespace only when asked, and otherwise says how', async () => {
  const namespace = uniqueId('absent');
  const refused = await ensureNamespaceReady(connection, namespace, { address: testAddress() }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(NamespaceSetupError);
  expect((refused as Error).message).toContain(`temporal operator namespace create --address ${testAddress()} --namespace ${namespace}`);
  await ensureNamespaceReady(connection, namespace, { address: testAddress(), create: true, retentionDays: 1 });
  expect(Object.keys(await attributes(namespace))).toHaveLength(5);
});

it('refuses a namespace holding one of the attributes with another type, naming it', async () => {
  const namespace = await bareNamespace({ Step: INDEXED.INDEXED_VALUE_TYPE_KEYWORD });
  await expect(ensureNamespaceReady(connection, namespace, { address: testAddress() })).rejects.toThrow(`namespace ${namespace} has search attributes of other types than the project's (Step is Keyword there, the project's is Int)`);
});

it('the orchestration worker registers them before it serves, and stops with exit 2 on a namespace that does not exist', async () => {
  const namespace = await bareNamespace();
  const served = await orchestrationWorker(namespace);
  expect(served.out).toContain(`registered the search attributes Experiment, Role, RolloutId, Step, FellBack in namespace ${namespace}`);
  expect(served.out).toContain('serving orchestration');
  expect(Object.keys(await attributes(namespace))).toHaveLength(5);

  const absent = uniqueId('absent');
  const stopped = await orchestrationWorker(absent);
  expect(stopped.out).toContain(`NamespaceSetupError: namespace ${absent} does not exist on ${testAddress()}: create it with`);
  expect(stopped.code).toBe(2);
}, 120_000);
