/**
 * The main job against a server set up elsewhere (issue 36, item 4): a dev server of this test's own
 * started WITHOUT the project's search attributes, as a self-hosted server is. The job registers
 * them in namespace `default` and the run finishes (it used to hang: every workflow task failed with
 * BadSearchAttributes); where the server refuses to register them, it stops at once saying what to
 * run; and a run whose workflow tasks keep failing for a reason no retry fixes (an attribute removed
 * mid-run) is reported, exit 1, instead of waited on forever.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { startDevServerOnFreePort, type RunningServer } from '../../scripts/lib/dev-server';
import { progressQuery } from '../../workflows/messages';
import { tinyRunConfig } from '../helpers/temporal';
import { killMainProcesses, startMain, type MainExit } from '../helpers/main-job';
import { waitFor } from '../helpers/wait';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-main-namespace-'));
let server: RunningServer;
let connection: Connection;

beforeAll(async () => {
  server = await startDevServerOnFreePort({ logFile: path.join(tmp, 'server.log'), detached: false, searchAttributes: false });
  connection = await Connection.connect({ address: server.address });
}, 120_000);

afterAll(async () => {
  killMainProcesses();
  await connection?.close();
  await server?.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const configFile = (name: string, raw: unknown): string => {
  const file = path.join(tmp, `${name}.json`);
  fs.writeFileSync(file, JSON.stringify(raw));
  return file;
};
const env = (namespace: string) => ({ TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: namespace, DURABLE_RL_STORE: path.join(tmp, 'store'), DURABLE_RL_RUNS: path.join(tmp, 'runs') });
/** The job's exit, or a failure naming what it printed if it has not ended within `ms` (the old code hung). */
const exitWithin = async (main: ReturnType<typeof startMain>, ms: number): Promise<MainExit> => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([main.exit, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the main job did not end within ${ms} ms; it printed:\n${main.output()}`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
};
const customAttributes = async (namespace: string) => (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};

it('registers the search attributes in namespace default of a server that lacks them, and the run finishes', async () => {
  expect(await customAttributes('default')).toEqual({});
  const workflowId = `main-no-attributes-${Date.now()}`;
  const { code, out } = await exitWithin(startMain(['--config', configFile('tiny', tinyRunConfig()), '--workflow-id', workflowId], env('')), 240_000);
  expect(out).toContain('registered the search attributes Experiment, Role, RolloutId, Step, FellBack in namespace default');
  expect(code).toBe(0);
  expect(Object.keys(await customAttributes('default')).sort()).toEqual(['Experiment', 'FellBack', 'Role', 'RolloutId', 'Step']);
  expect((await new Client({ connection }).workflow.getHandle(workflowId).describe()).status.name).toBe('COMPLETED');
}, 300_000);

it('stops at once, saying what to run, where the server refuses to register them', async () => {
  // The server's limit: three custom Bool attributes a namespace; this one has used them up.
  const namespace = 'bools-used-up';
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  const BOOL = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL;
  await waitFor('the namespace known', () => connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { A: BOOL, B: BOOL, C: BOOL } }).then(() => true), 30_000);
  const { code, out } = await exitWithin(startMain(['--config', configFile('tiny', tinyRunConfig())], env(namespace)), 60_000);
  expect(out).toContain(`namespace ${namespace} lacks the project's search attributes Experiment, Role, RolloutId, Step, FellBack`);
  expect(out).toContain('cannot have more than 3 search attribute of type Bool');
  expect(out).toContain(`temporal operator search-attribute create --address ${server.address} --namespace ${namespace} --name FellBack --type Bool`);
  expect(out).not.toContain('workflow start');
  expect(code).toBe(2);
}, 120_000);

it('reports a run whose workflow tasks keep failing for a reason no retry fixes, and exits 1', async () => {
  const workflowId = `main-attribute-removed-${Date.now()}`;
  // Long enough (one SFT step a chunk, each saving Step) for the removal to land mid-run.
  const main = startMain(['--config', configFile('longer', tinyRunConfig({ sft: { steps: 40, batchSize: 4, stepsPerActivity: 1, warmupSteps: 1 } })), '--workflow-id', workflowId], env(''));
  const handle = new Client({ connection }).workflow.getHandle(workflowId);
  await waitFor('SFT under way', async () => ((await handle.query(progressQuery)).step >= 1 ? true : undefined), 120_000);
  await connection.operatorService.removeSearchAttributes({ namespace: 'default', searchAttributes: ['Step'] });
  try {
    const { code, out } = await exitWithin(main, 120_000);
    expect(out).toContain(`run ${workflowId} cannot go on: the workflow task of ${workflowId} failed`);
    expect(out).toMatch(/BAD_SEARCH_ATTRIBUTES: .*Step/);
    expect(out).toContain(`temporal operator search-attribute create --address ${server.address} --namespace default --name Step --type Int`);
    expect(out).toContain(`continue it with --resume ${workflowId}`);
    expect(code).toBe(1);
    // Left on the server: registering the attribute again lets it go on.
    expect((await handle.describe()).status.name).toBe('RUNNING');
  } finally {
    await handle.terminate('test over').catch(() => undefined);
  }
}, 300_000);
