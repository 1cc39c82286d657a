/**
 * Failover after a worker process dies (workers/attempt-journal.ts): a replacement fails every
 * attempt the server handed the dead process, those its code never saw included, so they are
 * retried within seconds; and the start-up sweep on what a journal folder can hold: only dead
 * processes' registrations for this server and namespace are acted on, and nothing in the folder or
 * on the server stops a worker from starting. A killed trainer's chunk retried the same way:
 * test/workflows/worker-crash.test.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { parseRunConfig } from '../../src/config/parse';
import { REPO_ROOT } from '../../src/paths';
import { failDeadWorkersAttempts, WORKER_DIED, type JournalScope } from '../../workers/attempt-journal';
import { testAddress, testEnv, uniqueId, type TestEnv } from '../helpers/temporal';
import { waitFor } from '../helpers/wait';
import { workerProcesses } from '../helpers/worker-processes';

const QUEUE = 'test-fixtures';

let ctx: TestEnv;
let workers: ReturnType<typeof workerProcesses>;

beforeAll(async () => {
  // The calculator's workers are real OS processes; only the test workflow runs here.
  ctx = await testEnv('attempt-journal', []);
  await ctx.addWorker({ taskQueue: QUEUE, workflowBundle: { codePath: path.join(REPO_ROOT, 'dist', 'test-workflow-bundle.js') } });
  workers = workerProcesses(ctx);
});

afterAll(async () => {
  await workers?.killAll();
  await ctx?.stop();
});

/** The pid of a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

const eventMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

it("retries every attempt a killed worker had taken, those its code never saw included, within 5 s of its replacement's start", async () => {
  // Timeouts far beyond the test's patience: only the failover can get the attempts retried in time.
  const timeouts = parseRunConfig({ timeouts: { heartbeatSec: 300, toolSec: 300 } }).timeouts;
  const expressions = ['1+1', '2+3', '4*5', '6-1', '7*7', '9+9'];
  // The tools worker blocks its thread as the first calculator attempt reaches its code, before any
  // interceptor runs: the SDK's core goes on taking the other attempts from the server meanwhile, as
  // it does while a busy event loop has not yet run an attempt it received.
  const frozen = workers.spawnFreezingWorker('tools', 'calcWithAttempt:start:1');
  const handle = await ctx.env.client.workflow.start('calcsAtOnce', { taskQueue: QUEUE, workflowId: uniqueId('failover'), args: [timeouts, expressions] });
  expect(await frozen.frozen).toBe('FROZEN calcWithAttempt {"start":1}');
  const held = await waitFor('every calculator attempt started on the frozen worker', async () => {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    const started = pending.filter((a) => a.state === temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED);
    return started.length === expressions.length ? started : undefined;
  });
  expect(new Set(held.map((a) => a.lastWorkerIdentity)).size).toBe(1);
  expect(held[0]!.lastWorkerIdentity).toMatch(new RegExp(`^${frozen.child.pid}@`));
  expect(held.map((a) => a.attempt)).toEqual(expressions.map(() => 1));

  await workers.killHard(frozen.child);
  const replacedAt = Date.now();
  workers.spawnWorker('tools');
  let timer: NodeJS.Timeout | undefined;
  const results = await Promise.race([
    handle.result() as Promise<Array<{ value: string; attempt: number }>>,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error("the killed worker's attempts were not retried within 30 s")), 30_000);
    }),
  ]).finally(() => clearTimeout(timer));
  expect(results.map((r) => r.value)).toEqual(['2', '5', '20', '5', '49', '18']);
  expect(results.map((r) => r.attempt)).toEqual(expressions.map(() => 2));

  // Each retry started within 5 s of the replacement's start, after a WorkerDied failure.
  const retries = ((await handle.fetchHistory()).events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
  expect(retries).toHaveLength(expressions.length);
  for (const e of retries) {
    expect(e.activityTaskStartedEventAttributes!.lastFailure?.applicationFailureInfo?.type).toBe(WORKER_DIED);
    expect(eventMs(e.eventTime) - replacedAt).toBeLessThan(5_000);
  }
}, 120_000);

it("fails only dead processes' attempts for its own server and namespace, and never throws at start", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'durable-rl-journal-test-'));
  const scope: JournalScope = { dir, address: testAddress(), namespace: ctx.namespace };
  const dead = deadPid();
  const pidNamespace = fs.readlinkSync('/proc/self/ns/pid');
  const entry = (pid: number, over: Record<string, unknown> = {}) =>
    JSON.stringify({ identity: `${pid}@${os.hostname()}/test-${Math.random()}`, host: os.hostname(), pidNamespace, pid, address: scope.address, namespace: scope.namespace, ...over });
  const files: Record<string, string> = {
    [`worker-${dead}-half.json.tmp`]: '{"identity"',
    [`worker-${process.pid}-half.json.tmp`]: '{"identity"',
    [`worker-${process.pid}-live.json`]: entry(process.pid),
    [`worker-${dead}-other-namespace.json`]: entry(dead, { namespace: 'someone-else' }),
    [`worker-${dead}-other-host.json`]: entry(dead, { host: 'another-host' }),
    [`worker-${dead}-null.json`]: 'null',
    // Dead, this server's and namespace's, holding no attempt: swept and removed.
    [`worker-${dead}-mine.json`]: entry(dead),
    // Not a registration (the per-attempt files of earlier versions): left alone.
    [`${dead}-attempt.json`]: '{}',
  };
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);

  const lines = await failDeadWorkersAttempts(ctx.env.nativeConnection, scope);

  const left = fs.readdirSync(dir).sort();
  expect(left).toEqual(
    [`${dead}-attempt.json`, `worker-${dead}-null.json`, `worker-${dead}-other-host.json`, `worker-${dead}-other-namespace.json`, `worker-${process.pid}-half.json.tmp`, `worker-${process.pid}-live.json`].sort(),
  );
  expect(lines).toEqual([expect.stringMatching(/^worker-\d+-null\.json: left for the next start/)]);
  expect(await failDeadWorkersAttempts(ctx.env.nativeConnection, { ...scope, dir: path.join(dir, 'absent') })).toEqual([]);

  // A server that refuses the sweep (here a namespace it does not have): the registration stays for
  // the next start, and the sweep says so instead of throwing.
  const refused = { ...scope, dir: path.join(dir, 'refused'), namespace: uniqueId('no-such-namespace') };
  fs.mkdirSync(refused.dir);
  fs.writeFileSync(path.join(refused.dir, `worker-${dead}-refused.json`), entry(dead, { namespace: refused.namespace }));
  expect(await failDeadWorkersAttempts(ctx.env.nativeConnection, refused)).toEqual([expect.stringMatching(new RegExp(`^could not fail the attempts of dead worker ${dead} \\(Namespace not found`))]);
  expect(fs.readdirSync(refused.dir)).toEqual([`worker-${dead}-refused.json`]);
  fs.rmSync(dir, { recursive: true, force: true });
});
